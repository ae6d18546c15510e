"""deploybot core: parse -> probe -> plan -> launch -> follow, rendered to a Thread."""
