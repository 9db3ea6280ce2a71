"""The server's routes by resource: health, documents and jobs, questions."""
