"""Small programs that built-in components run inside the job (``python -m torchx.apps...``)."""
