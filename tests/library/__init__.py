"""The model library (`app/library`): scanning, downloads, projectors, the hub."""
