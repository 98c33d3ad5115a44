"""Storage: list logdirs and open files through fsspec (local, s3://, gs://, az://); the parse cache."""
