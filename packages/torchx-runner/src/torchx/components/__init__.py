"""Built-in components: ready-made functions that return an :class:`~torchx.specs.AppDef`.

A *component* is a plain, fully type-annotated Python function whose return type is
``AppDef``. Its parameters become command-line options of ``torchx run`` and its
Google-style docstring (``Args:``) becomes their help, so ``torchx run dist.ddp --help``
documents every parameter. Components only describe *what* to run; the scheduler picked
at launch time (``-s local_cwd``, ``-s kubernetes``...) decides *where*.

Built-ins, named ``<module>.<function>`` relative to this package:

* ``dist.ddp`` / ``dist.spmd``: distributed PyTorch through ``torchrun`` (elastic,
  ``-j [MIN:]MAXxNPROC``)
* ``utils.echo``, ``utils.touch``, ``utils.sh``, ``utils.python``, ``utils.binary``:
  run a command, a shell line, a Python module/script/snippet or any program
* ``utils.copy``: copy one file between fsspec URLs
* ``utils.booth``: evaluate the Booth function (an HPO example)
* ``utils.hydra``: build an app from a Hydra config (needs ``torchx-runner[hydra]``)

Write your own by following the same rules and run it as ``path/to/file.py:function``,
or register a module of components under the ``torchx.components`` entry-point group.
"""
