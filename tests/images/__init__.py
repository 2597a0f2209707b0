"""Image files checked before anything else sees them (`app/images`)."""
