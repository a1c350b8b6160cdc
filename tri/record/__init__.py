"""Record-keeping: versioning (DVC, git), MLflow (mlstore, runs, outputs, registry, provenance),
stores, pictures and curves. Recording only reads files; render plays the game it draws."""
