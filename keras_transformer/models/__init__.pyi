from .config import TransformerConfig
from .transformer import Transformer, build_transformer

__all__ = ["Transformer", "TransformerConfig", "build_transformer"]
