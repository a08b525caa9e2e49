from .app import create_app
from .model import ServedModel
from .settings import BatchingParameters, RequestLimits

__all__ = ["BatchingParameters", "RequestLimits", "ServedModel", "create_app"]
