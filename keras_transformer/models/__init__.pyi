from .config import TransformerConfig
from .saved_layout import load_model
from .transformer import Transformer, build_transformer

__all__ = ["Transformer", "TransformerConfig", "build_transformer", "load_model"]
