"""SGLang runtime (simulated)."""
