"""`serve`: TF Serving's REST API for an export or a run, on this machine."""

from keras_transformer.serving.settings import BatchingParameters, RequestLimits


def add_serve_parser(commands):
    parser = commands.add_parser(
        "serve",
        help="serve an export or a run over HTTP, with TF Serving's REST API",
        description="Answers TF Serving's REST API (POST "
        "/v1/models/NAME[/versions/N]:predict, GET /v1/models/NAME and its "
        "/metadata) for every signature of an export, so that TF Serving's "
        "clients work unchanged; and GET /healthz. Needs the serve extra "
        '(pip install -e ".[serve]").',
    )
    parser.add_argument(
        "path",
        help="an export's version folder, its model folder (the highest "
        "version is served) or a run folder (exported first)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="default: 127.0.0.1, this machine only"
    )
    parser.add_argument("--port", type=int, default=8501, help="default: 8501")
    parser.add_argument(
        "--model-name",
        default=None,
        help="the NAME in the URLs (default: the export's model folder's name, "
        "or the run's export name)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="TensorFlow's CPU threads, 0 for all cores (default: 0)",
    )
    defaults = BatchingParameters()
    parser.add_argument(
        "--enable-batching",
        action="store_true",
        help="merge concurrent requests into batches, as TF Serving's "
        "--enable_batching does",
    )
    limits = RequestLimits()
    for settings, name, help_text in (
        (defaults, "max_batch_size", "the most rows of a merged batch"),
        (defaults, "batch_timeout_micros", "how long a batch waits for more requests"),
        (defaults, "num_batch_threads", "batches run at once"),
        (limits, "max_body_bytes", "the largest request body, larger is answered 413"),
        (limits, "max_rows", "the most texts of a request, larger is answered 413"),
        (limits, "max_characters", "the longest text, larger is answered 413"),
    ):
        parser.add_argument(
            "--" + name.replace("_", "-"),
            type=int,
            default=getattr(settings, name),
            help=f"{help_text}; default: {getattr(settings, name)}",
        )
    parser.add_argument(
        "--cors-origins",
        nargs="+",
        default=(),
        metavar="ORIGIN",
        help="origins whose pages may call the server (default: none, CORS off)",
    )
    parser.set_defaults(run=serve)


def serve(args):
    try:
        import uvicorn
    except ImportError as error:
        raise ImportError(
            f"serve needs the serve extra ({error}): pip install -e '.[serve]'"
        ) from None

    from keras_transformer.serving.app import create_app
    from keras_transformer.serving.model import ServedModel

    batching = BatchingParameters(
        args.enable_batching,
        args.max_batch_size,
        args.batch_timeout_micros,
        args.num_batch_threads,
    )
    limits = RequestLimits(args.max_body_bytes, args.max_rows, args.max_characters)
    model = ServedModel(args.path, args.model_name, args.threads)
    try:
        app = create_app(model, batching, limits, args.cors_origins)
        print(
            f"Serving {model.path} as {model.name!r}, version {model.version}: "
            f"http://{args.host}:{args.port}/v1/models/{model.name}",
            flush=True,
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    finally:
        model.close()
