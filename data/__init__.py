"""The workbook's data tables, installed as the package ``k3lib.data`` (pyproject.toml maps
this folder onto it), so a wheel carries them and :mod:`k3lib.core.data` reads them through
:mod:`importlib.resources`. No code lives here; every row carries its public source."""
