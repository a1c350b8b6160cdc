"""Record-keeping: versioning (DVC, git), tracking (MLflow), stores, pictures and curves."""
