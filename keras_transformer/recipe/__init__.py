"""A training run: its config, its folder, its plan, the trainer, `run()`.

    from keras_transformer.recipe import load_config
    from keras_transformer.recipe.run import run

    config = load_config("run.yaml", sets=["training.epochs=3"])
    results = run(config)  # what `keras-transformer train` does

`RunConfig` holds every setting (`config`, `config_files`), `RunDirectory`
alone knows a run folder's files (`run_directory`), `TrainingPlan` is what a
run will do, computed once (`plan`), `trainer` fits and resumes,
`evaluation` scores, and `run` ties them together.
"""

from keras_transformer.lazy import lazy_attributes

_EXPORTS = {
    "RunConfig": "keras_transformer.recipe.config",
    "load_config": "keras_transformer.recipe.config_files",
    "RunDirectory": "keras_transformer.recipe.run_directory",
    "TrainingPlan": "keras_transformer.recipe.plan",
    "make_plan": "keras_transformer.recipe.plan",
    "averaged_model": "keras_transformer.recipe.evaluation",
    "evaluate_run": "keras_transformer.recipe.evaluation",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
