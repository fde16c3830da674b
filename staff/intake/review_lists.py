"""What the review scan (`staff/intake/review_marks.py`) marks by name: the modules, attributes and calls
that reach past the grader's instruments, run code from text or foreign code, and the few names honest
code may use though they look like those. Each entry says why where the name does not."""

from __future__ import annotations

from staff.sandbox.layout import WORKER_FILES

# Modules whose import alone reaches past the instruments, runs foreign code or resolves names from text.
MODULES = {
    "ctypes": "foreign code through ctypes", "cffi": "foreign code through cffi",
    "numpy.ctypeslib": "foreign code through numpy.ctypeslib",
    "gc": None,  # get_objects and its kin only (ATTRIBUTES): gc.collect() is honest
    "inspect": "frames and objects through inspect",
    "importlib": "importing modules by a computed name (importlib)", "builtins": "the builtins module",
    "pkgutil": "objects resolved from text (pkgutil)", "pydoc": "objects resolved from text (pydoc)",
    "runpy": "code run from a file or a name (runpy)", "zipimport": "code imported from an archive (zipimport)",
    "site": "folders added to the import path (site)", "code": "an interpreter run from text (code)",
    "codeop": "code compiled from text (codeop)", "unittest.mock": "objects replaced by a name in text (mock)",
    "mock": "objects replaced by a name in text (mock)", "shelve": "objects built by name from bytes (shelve)",
    "marshal": "code objects from bytes (marshal)", "types": None,  # see TYPES
    "torch.library": "kernels registered for torch's operators (torch.library)",
    "torch.overrides": "torch's function-mode machinery (torch.overrides)", "torch.ops": "torch's operator table",
    "operator": None,  # attrgetter and methodcaller only: see CALLS
    "pickle": None, "dill": None, "cloudpickle": None,  # their loads only: see PICKLE_LOADS
    # A subclass is handed each object a format string's fields name ("{0.modules[importlib]}"), by text.
    "string.Formatter": "objects fetched by names written in text (string.Formatter)",
    # Code given as text, compiled and run by the module: a timer's stmt and setup, a profiler's or tracer's
    # command, a docstring's examples, the debugger's commands.
    "timeit": None,  # its clock (default_timer) is honest; what takes a stmt or a setup is not:
    "timeit.timeit": "code run from text (timeit compiles its stmt and setup)",
    "timeit.repeat": "code run from text (timeit compiles its stmt and setup)",
    "timeit.Timer": "code run from text (timeit compiles its stmt and setup)",
    "timeit.main": "code run from text (timeit compiles its stmt and setup)",
    "cProfile": "code run from text (cProfile)", "profile": "code run from text (profile)",
    "trace": "code run from text (trace)", "doctest": "code run from text (doctest's examples)",
    "pdb": "the debugger, which runs code from text (pdb)", "bdb": "the debugger's base, which traces frames (bdb)",
    "rlcompleter": "expressions evaluated from text (rlcompleter)", "idlelib": "code run from text (idlelib)",
    # String annotations are evaluated as code (forward references): typing's and annotationlib's resolvers.
    "typing.get_type_hints": "string annotations evaluated as code (typing.get_type_hints)",
    "typing_extensions.get_type_hints": "string annotations evaluated as code (typing_extensions.get_type_hints)",
    "typing.ForwardRef": "text evaluated as a type (typing.ForwardRef)",
    "typing.evaluate_forward_ref": "text evaluated as a type (typing.evaluate_forward_ref)",
    "annotationlib": "annotations evaluated as code (annotationlib)",
    "imp": "modules imported from a file or by a computed name (imp)",
    # Objects named in text, imported and returned: dictConfig's "()" factories and "ext://" values, fileConfig's
    # eval of a handler's args; a test loader's names; entry points; import hooks that resolve their checker.
    "logging.config": "objects resolved from text (logging.config)",
    "unittest": "objects resolved from text (unittest's loaders)",
    "pkg_resources": "objects resolved from text (pkg_resources)",
    "test.support": "modules imported by a computed name (test.support)",
    "jaxtyping.install_import_hook": "an import hook that rewrites modules (jaxtyping)",
    "beartype.claw": "an import hook that rewrites modules (beartype.claw)",
    "torch.utils.cpp_extension": "foreign code compiled at run time (torch.utils.cpp_extension)",
    "torch.package": "code imported from an archive (torch.package)",
}
# Code run in another process, where the instruments (which watch the serving process only) see nothing: a
# helper started at import can run torch's Adagrad for Problem 8 unseen. Nothing in these problems needs one;
# the worker allows them (multiprocessing's pools work), so they are marked, not refused.
MODULES.update({name: f"code run in another process, where the grader's checks do not look ({name})" for name in (
    "multiprocessing", "subprocess", "pty", "concurrent.futures.ProcessPoolExecutor", "concurrent.futures.process",
    "os.fork", "os.forkpty", "os.posix_spawn", "os.posix_spawnp", "os.system", "os.popen",
    *(f"os.exec{suffix}" for suffix in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
    *(f"os.spawn{suffix}" for suffix in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")))})
# The grader's own code in the worker: the adapters (whose globals the tests' checks read when they run) and
# the worker's modules. Honest code imports none of it.
GRADER_MODULES = frozenset({"adapters", "tests", "staff", *(name.removesuffix(".py") for name in WORKER_FILES)})
# Attributes, on any object, that lead to frames, the objects a function closes over, the type system, or
# torch's dispatch machinery (by names no honest code of these problems writes).
ATTRIBUTES = {
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "f_trace", "tb_frame", "tb_next", "gi_frame",
    "cr_frame", "ag_frame", "gi_code", "__closure__", "__globals__", "__code__", "__builtins__", "__subclasses__",
    "__getattribute__", "__mro__", "__bases__", "__base__", "__self__", "__func__", "__wrapped__", "cell_contents",
    "__kwdefaults__", "__defaults__", "__reduce__", "__reduce_ex__", "_getframe", "_current_frames", "settrace",
    "setprofile", "settrace_all_threads", "setprofile_all_threads", "addaudithook", "get_objects", "get_referrers",
    "get_referents", "get_field", "walk_stack", "walk_tb", "__getattr__", "__setattr__", "__delattr__",
    "__torch_function__", "__torch_dispatch__", "attrgetter", "methodcaller",
    "aten", "_C", "_ops", "_python_dispatch", "_DisableTorchDispatch", "_DisableTorchFunction", "DisableTorchFunction",
    "DisableTorchFunctionSubclass", "_get_current_dispatch_mode_stack", "_get_current_dispatch_mode", "_pop_mode",
    "_push_mode", "_pop_mode_temporarily", "handle_torch_function", "_instrument",
    # autograd's graph, whose nodes compute gradients when called, past the block on autograd's entry points
    "grad_fn", "next_functions",
    # torch's dispatch-mode classes, which every public module that imported them hands out again
    # (`torch.utils.flop_counter.TorchDispatchMode`), and the FLOP counter's table of formulas
    "TorchDispatchMode", "TorchFunctionMode", "BaseTorchFunctionMode", "flop_registry", "register_flop_formula",
    # a function's annotations, whose strings functools.singledispatch's register and typing's hints evaluate
    "__annotations__",
}
# Attributes of sys only: `self.modules`, a model's `.modules()` and `Path.path` are honest.
SYS_ATTRIBUTES = {"modules", "path", "meta_path", "path_hooks", "path_importer_cache", "monitoring"}
# Hooks a class of the student's can define that put its code inside torch's dispatch, before the grader's modes.
HOOKS = {"__torch_function__", "__torch_dispatch__"}
TYPES = {"FunctionType", "LambdaType", "CodeType", "CellType", "FrameType", "TracebackType", "MethodType"}
# Calls that run or reach code by a name computed at run time: marked called, and passed as values too.
CALLS = {"exec": "code run from text (exec)", "eval": "code run from text (eval)",
         "compile": "code compiled from text", "__import__": "importing a module by a computed name",
         "globals": "the module's globals as a dict", "locals": "a frame's locals as a dict",
         "vars": "an object's attributes as a dict", "breakpoint": "the debugger",
         "attrgetter": "attributes fetched by a computed name", "methodcaller": "methods fetched by a computed name"}
NAMED_BY_TEXT = {"getattr", "setattr", "delattr", "hasattr"}  # honest with a written-out public name
PICKLE_LOADS = {"load", "loads", "Unpickler"}
# Private torch names honest code uses: torch's multi-tensor updates, which the handout's AdaGrad may use.
PRIVATE_ALLOWED_PREFIXES = ("_foreach_",)
# Names with an underscore that the standard library documents as public, and that reach no instrument.
DOCUMENTED_UNDERSCORED = {"os._exit"}
COMPILED = (".so", ".pyd", ".dll", ".dylib")  # the intake leaves out .pyc files and __pycache__ already
# A method's own object, whose __dict__ it may write by written-out public names (`self.__dict__["w"] = v`,
# `self.__dict__.update(...)`). Not read: any function may be called with any object as its `self` (an
# unbound method, a default `self=sys`), and a read hands out what the object holds (`sys.__dict__`).
OWN_OBJECTS = {"self", "cls"}
# Attributes of imported modules and classes that honest code sets: torch's documented switches
# (`torch.backends.cudnn.benchmark = True`, `torch.backends.cuda.matmul.allow_tf32 = True`).
SETTINGS_PREFIXES = ("torch.backends.",)
# A special attribute honest code may set on another object: a function's docstring.
SETTABLE_DUNDERS = {"__doc__"}
DESCRIPTIONS = {"__doc__", "__name__", "__qualname__"}  # read from a function, text: the function is not handed over
