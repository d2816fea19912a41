"""An environment's YAML files into the model: reading, guards, the YAML engine, generated files, --limit selections."""
