"""All reads that are more than a one-line query."""
