from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

ArrayLike = npt.ArrayLike

class BmrmError(RuntimeError): ...
MULTICLASS_BCFW_MAX_CONDITION: float
MULTICLASS_BCFW_MIN_EXAMPLES: int
# The engine registry: (name, aliases, C value, exactness, summary) per engine.
ENGINES: List[Tuple[str, List[str], int, str, str]]

class Info:
    exit: str
    exit_code: int
    iterations: int
    oracle_calls: int
    primal: float
    lower_bound: float
    gap: float
    risk: float
    num_planes: int
    active_planes: int
    elapsed_seconds: float
    oracle_seconds: float
    qp_seconds: float
    certified: bool

class FullRisk:
    dim: int
    def __init__(self, func: Callable[[np.ndarray], Tuple[float, ArrayLike]], dim: int) -> None: ...

class PartitionedRisk:
    dim: int
    num_parts: int
    def __init__(
        self, func: Callable[[int, np.ndarray], Tuple[float, ArrayLike]], dim: int, num_parts: int
    ) -> None: ...

class MaxOracle:
    dim: int
    num_examples: int
    def __init__(
        self,
        func: Callable[[int, np.ndarray], Tuple[float, Union[ArrayLike, Tuple[ArrayLike, ArrayLike]], int]],
        dim: int,
        num_examples: int,
    ) -> None: ...

class MulticlassModel:
    dim: int
    num_examples: int
    num_classes: int
    def __init__(self, x: Any, y: ArrayLike, num_classes: Optional[int] = None, bias: bool = False) -> None: ...
    def risk(self, w: ArrayLike) -> Tuple[float, np.ndarray]: ...

class ChainModel:
    dim: int
    num_examples: int
    num_labels: int
    def __init__(
        self, x: Any, lengths: ArrayLike, labels: ArrayLike, num_labels: int, bias: bool = False
    ) -> None: ...
    def predict(self, w: ArrayLike) -> np.ndarray: ...
    def risk(self, w: ArrayLike) -> Tuple[float, np.ndarray]: ...

class GraphModel:
    dim: int
    num_examples: int
    exact: bool
    def __init__(
        self,
        node_counts: ArrayLike,
        states: ArrayLike,
        labels: ArrayLike,
        node_features: ArrayLike,
        edge_counts: ArrayLike,
        edges: ArrayLike,
        node_types: Optional[ArrayLike] = None,
        edge_types: Optional[ArrayLike] = None,
        edge_features: Optional[ArrayLike] = None,
        symmetric: Optional[ArrayLike] = None,
        antisymmetric: Optional[ArrayLike] = None,
        per_state: bool = False,
        class_weight: Optional[ArrayLike] = None,
        normalise: bool = False,
        engine: str = "auto",
        bias: bool = False,
        loss_table: Optional[ArrayLike] = None,
        allowed: Optional[ArrayLike] = None,
        potts: bool = False,
        table_form: str = "state-major",
        edge_type_states: Optional[ArrayLike] = None,
    ) -> None: ...
    def unary_offset(self, node_type: int) -> int: ...
    def positivity_coordinates(self) -> np.ndarray: ...
    def pairwise_offset(self, edge_type: int) -> int: ...
    def predict(self, w: ArrayLike) -> Tuple[np.ndarray, bool]: ...
    def loss_augmented(self, w: ArrayLike) -> Tuple[np.ndarray, bool]: ...
    def relaxed(self, w: ArrayLike, loss_augmented: bool = ..., branch_and_bound: bool = ...
                ) -> List[Tuple[np.ndarray, bool, np.ndarray, np.ndarray]]: ...
    def risk(self, w: ArrayLike) -> Tuple[float, np.ndarray]: ...

Problem = Union[FullRisk, PartitionedRisk, MaxOracle, MulticlassModel, ChainModel, GraphModel]

class Solver:
    info: Info
    dim: int
    lambda_: float
    settings: Dict[str, Any]
    history: Dict[str, np.ndarray]
    def __init__(
        self,
        problem: Problem,
        algorithm: str = "bmrm",
        lambda_: float = 1.0,
        progress: Optional[Callable[[Info], Optional[bool]]] = None,
        **settings: Any,
    ) -> None: ...
    def run(self, w0: Optional[ArrayLike] = None) -> Tuple[np.ndarray, Info]: ...
    def set_lambda(self, lambda_: float) -> None: ...
    def set_bounds(self, lower: Optional[ArrayLike] = None, upper: Optional[ArrayLike] = None) -> None: ...
    def planes(self) -> Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]]: ...
    def bcfw_stats(self) -> Optional[Dict[str, float]]: ...
    def bcfw_iterate(self) -> Optional[np.ndarray]: ...
    def regularization_path(
        self, eps: float, lambda_min: float, max_breakpoints: int = 1000
    ) -> List[Dict[str, Any]]: ...

def decode_potentials(
    unary: ArrayLike,
    pairwise: ArrayLike,
    edges: ArrayLike,
    n_nodes: int,
    n_states: int,
    engine: str,
) -> Tuple[List[int], bool]: ...
