"""A training run: its config, its folder, its plan, the trainer, `run()`.

    from keras_transformer.recipe import load_config
    from keras_transformer.recipe.run import run

    config = load_config("run.yaml", sets=["training.epochs=3"])
    results = run(config)  # what `keras-transformer train` does

`RunConfig` holds every setting (`config`, `config_files`), `RunDirectory`
alone knows a run folder's files (`run_directory`), `TrainingPlan` is what a
run will do, computed once (`plan`), `trainer` fits and resumes,
`evaluation` scores, and `run` ties them together. The names (in
`__init__.pyi`) are imported on first use.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
