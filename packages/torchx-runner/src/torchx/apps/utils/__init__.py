"""Programs behind the ``utils.*`` components (``copy_main``, ``booth_main``)."""
