"""Where and how deployments run: the Backend protocol (base.py), the backends (process.py, ...), and the registry
of backends by app.yaml's `backend:` kind (registry.py: `BACKENDS`, `BackendPool`)."""
