from .config import RunConfig
from .config_files import load_config
from .evaluation import averaged_model, evaluate_run
from .plan import TrainingPlan, make_plan
from .run_directory import RunDirectory

__all__ = [
    "RunConfig",
    "RunDirectory",
    "TrainingPlan",
    "averaged_model",
    "evaluate_run",
    "load_config",
    "make_plan",
]
