"""What marks a grade for a person's review (staff/intake/review_marks.py): every way code can reach the
instruments inside the worker is marked, honest code never is, and the mark reaches the results, the
summary, grades.csv and summary.md."""

from __future__ import annotations

import ast
import csv
import time
from pathlib import Path

import pytest

from staff import samples
from staff.course.batch import grade_one
from staff.course.folder import Submission
from staff.course.gradebook import write_gradebook
from staff.grading.grade import Grade
from staff.intake.review_marks import MOST_BYTES, MOST_MARKS, find, marks_in
from staff.validate.variants import WHEAT, build, load_variants
from tests.grading import PASSED, GradedTest

# Each reaches, or could reach, an instrument in the worker's process: a private torch module or name, a
# frame, the objects a function closes over, a name computed at run time, foreign or rebuilt code.
REACHING = {
    "private module imported": "import torch._C\n",
    "private module, from": "from torch.utils._python_dispatch import _get_current_dispatch_mode_stack\n",
    "private name, from": "from torch._C import _DisableTorchDispatch\n",
    "private name, aliased module": "import torch as t\nwith t._C.DisableTorchFunction():\n    pass\n",
    "private name, aliased import": "from torch import _C as c\n",
    "operator table": "import torch\ny = torch.ops.aten.as_strided.default(x, (2,), (1,))\n",
    "operator table, from": "from torch import ops\n",
    "function modes": "from torch.overrides import TorchFunctionMode\n",
    "kernel registry": "import torch.library\n",
    "a frame": "import sys\nseen = sys._getframe(1).f_locals\n",
    "a frame, from a traceback": "try:\n    raise ValueError\nexcept ValueError as e:\n"
                                 "    f = e.__traceback__.tb_frame.f_back\n",
    "every object": "import gc\nfor o in gc.get_objects():\n    pass\n",
    "every object, from": "from gc import get_referrers\n",
    "closures": "cell = f.__closure__[0].cell_contents\n",
    "globals of a function": "g = f.__globals__\n",
    "foreign code": "import ctypes\n",
    "code from text": "exec(text)\n",
    "expression from text": "v = eval(text)\n",
    "import by name": "m = __import__(name)\n",
    "importlib": "import importlib\nm = importlib.import_module(name)\n",
    "attribute by a computed name": "import torch\nc = getattr(torch, name)\n",
    "private attribute by text": "import torch\nc = getattr(torch, '_C')\n",
    "module dict": "import torch\nc = torch.__dict__['_C']\n",
    "vars": "import torch\nc = vars(torch)['_C']\n",
    "attrgetter": "import operator\nimport torch\nc = operator.attrgetter(name)(torch)\n",
    "attrgetter, from": "from operator import attrgetter\n",
    "format field": "import string\nc = string.Formatter().get_field('0._C', [torch], {})\n",
    "getattribute": "c = object.__getattribute__(torch, name)\n",
    "a tensor subclass in the dispatch": "class T:\n    def __torch_dispatch__(cls, func, types, args, kwargs):\n"
                                         "        pass\n",
    "pickle's loads": "import pickle\no = pickle.loads(data)\n",
    # Another process, which the instruments do not watch: torch's Adagrad stepped by a helper forked at
    # import kept Problem 8's tests (the red team's adagrad-stepped-by-a-helper-started-at-import).
    "a forked helper": "import os\nif os.fork() == 0:\n    serve()\n",
    "a forked helper, from": "from os import fork as f\npid = f()\n",
    "a process pool": "import multiprocessing\npool = multiprocessing.Pool(1)\n",
    "a process pool executor": "from concurrent.futures import ProcessPoolExecutor\n",
    "a program started": "import subprocess\nsubprocess.run([sys.executable, '-c', text])\n",
    "an interpreter exec'd": "import os, sys\nos.execv(sys.executable, [sys.executable])\n",
    "checkpoint with pickle's powers": "import torch\no = torch.load(path, weights_only=False)\n",
    "checkpoint with a computed flag": "import torch\no = torch.load(path, weights_only=flag)\n",
    "array file with pickle's powers": "import numpy as np\no = np.load(path, allow_pickle=True)\n",
    "the module table": "import sys\ninstrument = sys.modules['adapters._instrument']\n",
    "the grader's instruments": "import adapters._instrument\n",
    "functions from code": "import types\nf = types.FunctionType(code, {})\n",
    "builtins module": "import builtins\n",
    "builtins by name": "g = __builtins__['getattr']\n",
    "the adapters' globals": "import adapters.strides\nadapters.strides.STRIDED_VIEW_MAKERS.clear()\n",
    "the adapters, from": "from adapters import flops\nflops.ScriptedMatmuls = object\n",
    "the worker's modules": "import frames\n",
    "a path resolved from text": "import pkgutil\nf = pkgutil.resolve_name('torch.utils:x')\n",
    "an object located from text": "import pydoc\nc = pydoc.locate(name)\n",
    "a file run as code": "import runpy\nrunpy.run_path('notes.txt')\n",
    "a name patched from text": "from unittest import mock\nmock.patch('adapters.strides.same_bits').start()\n",
    "the module table, from": "from sys import modules\nm = modules['gc']\n",
    "the import path": "import sys\nsys.path.insert(0, '.')\n",
    "a module bound to a plain name": "import torch\nT = torch\nwith T._C.DisableTorchFunction():\n    pass\n",
    "a private name on a parameter": "def f(m):\n    return m._C\n",
    "a dict of a parameter": "g = (lambda m: m.__dict__)(torch)\n",
    "a type's dict": "s = type.__dict__['__subclasses__'](object)\n",
    "getattr as a value": "import functools\nimport torch\nf = functools.reduce(getattr, names, torch)\n",
    "eval as a value": "e = eval\n",
    "autograd's graph called": "out = (x @ w).sum()\ngx, gw = out.grad_fn.next_functions[0][0](torch.ones(2, 2))\n",
    "attrgetter as a value": "import operator\nget = operator.attrgetter\n",
    "a hook assigned in a class": "class T:\n    __torch_function__ = classmethod(f)\n",
    "a hook named in a type() call": "T = type('T', (object,), {'__torch_dispatch__': f})\n",
    "load options by a dict": "import torch\no = torch.load(p, **options)\n",
    "frames from the traceback module": "import traceback\nfor frame, line in traceback.walk_stack(None):\n"
                                        "    pass\n",
    "a codec the code registers": b"# coding: notes_rot13\nimport torch\n",
    "a syntax error": "def f(:\n",
    "fullwidth letters": "import torch\ny = torch.\uff4f\uff50\uff53.aten\n",  # NFKC: the parser reads `ops`
    # `self` is whatever a function is called with (a default, an unbound method): a read of its __dict__
    # hands out what any object holds, sys.modules and torch._C by key.
    "a dict read through a self that defaults to sys": "import sys\ndef t(self=sys):\n"
                                                         "    return self.__dict__['modules']\n",
    "a method's dict read by a computed key": "class A:\n    def f(self, name):\n"
                                              "        return self.__dict__[name]\n",
    "a method's whole dict handed out": "class A:\n    def f(self):\n        return self.__dict__\n",
    "a private name written through a method's dict": "class A:\n    def f(self, v):\n"
                                                      "        self.__dict__['_C'] = v\n",
    "objects fetched by a format string's fields": "from string import Formatter\n",
    "a format field naming the import system": "x = '{0.modules[importlib]}'.format(y)\n",
    "the grader's module named in text": "m = loader.import_module('adapters.strides')\n",
    # Standard-library modules that run code given as text, or resolve objects named in it.
    "a timer's set-up text": "import timeit\ntimeit.timeit(stmt='pass', setup=text, globals={'found': found})\n",
    "a timer, from": "from timeit import Timer\n",
    "a timer got by getattr": "import timeit as t\nrun = getattr(t, 'timeit')\n",
    "string hints got by getattr": "import typing\nhints = getattr(typing, 'get_type_hints')(f)\n",
    "a profiler's command": "import cProfile\ncProfile.run(text)\n",
    "docstrings' examples run": "import doctest\n",
    "the debugger": "import pdb\n",
    "a tracer": "from trace import Trace\n",
    "string hints resolved": "import typing\nhints = typing.get_type_hints(f)\n",
    "string hints resolved, from": "from typing import get_type_hints\n",
    "the logging configurator": "import logging.config\nm = logging.config.BaseConfigurator({}).resolve(name)\n",
    "the logging configurator through logging": "import logging\nlogging.config.dictConfig(config)\n",
    "a test loader's names": "import unittest\nunittest.defaultTestLoader.loadTestsFromName(name)\n",
    "C++ compiled at run time": "from torch.utils.cpp_extension import load_inline\n",
    # A string annotation is code where typing's hints, inspect or jaxtyping resolve it.
    "code in a string annotation": "def g(w: \"f(__import__('m', fromlist=['x']))\") -> None:\n    pass\n",
    "code in a string return annotation": "def g() -> '(lambda: m)()':\n    pass\n",
    "code in a variable's string annotation": "x: 'f()' = 1\n",
    "code in a forward reference inside an annotation": "def g(w: list['f()']):\n    pass\n",
    "code in a jaxtyping size": "def g(x: Float[Tensor, 'b min(f(),1)']):\n    pass\n",
    "code in a jaxtyping size outside an annotation": "from jaxtyping import Float\n"
                                                        "ok = isinstance(x, Float[Tensor, 'b f()'])\n",
    "annotations written at run time": "g.__annotations__['w'] = text\n",
    "a private module in a string annotation": "import torch\ndef g(x: 'torch._C.Generator'):\n    pass\n",
    # The grader's module named inside a longer text, or built from pieces.
    "the grader's module inside code as text": "setup = \"found.append(__import__('adapters.flops'))\"\n",
    "the grader's module after other words": "m = resolve('x adapters.strides')\n",
    "the grader's package quoted in text": "setup = \"__import__('adapters', fromlist=['flops'])\"\n",
    "the worker's module in text": "m = resolve('frames.caller')\n",
    "the grader's module from pieces": "m = resolve('adapter' + 's.strides')\n",
    "the grader's module joined": "m = resolve(''.join(['adap', 'ters', '', '.strides']))\n",
    "the grader's module joined by dots": "m = resolve('.'.join(('tests', 'grading')))\n",
    "the grader's module in an f-string": "m = resolve(f\"{'adapter'}s.strides\")\n",
    "the grader's module formatted": "m = resolve('{}s.strides'.format('adapter'))\n",
    "the grader's module by percent": "m = resolve('%ss.strides' % 'adapter')\n",
    "the grader's module reversed": "m = resolve('sedirts.sretpada'[::-1])\n",
    "the grader's module with a computed tail": "m = resolve('adapters.' + name)\n",
    "the grader's module in bytes": "m = resolve(b'adapters.strides'.decode())\n",
    "a hook named from pieces": "T = type('T', (object,), {'__torch_' + 'dispatch__': f})\n",
    # Attributes of imported modules and classes set: the instruments are built on torch's classes.
    "torch's counter patched": "import torch.utils.flop_counter\n"
                               "torch.utils.flop_counter.FlopCounterMode.get_total_flops = total\n",
    "torch's counter patched through an alias": "import torch.utils.flop_counter\n"
                                                "C = torch.utils.flop_counter.FlopCounterMode\n"
                                                "C.get_total_flops = total\n",
    "torch's counter patched, from": "from torch.utils.flop_counter import FlopCounterMode as C\n"
                                     "C.get_total_flops = int\n",
    "a patch through an alias bound below": "def patch():\n    C.get_total_flops = int\n\n"
                                            "import torch.utils.flop_counter as fc\nC = fc.FlopCounterMode\n",
    "a patch by setattr": "import torch\nsetattr(torch.nn.Module, 'forward', int)\n",
    "a module's function deleted": "import torch\ndel torch.nn.functional.relu\n",
    "a class attribute added to": "import torch\ntorch.utils.flop_counter.FlopCounterMode.count += 1\n",
    "a patch through the student's own module": "from . import model\nmodel.torch.nn.Linear.forward = int\n",
    "a patch through a parameter's default": "from torch.utils.flop_counter import FlopCounterMode\n"
                                             "def t(self=FlopCounterMode):\n    self.get_total_flops = int\n",
    "a special method set": "def patch(mode):\n    mode.__exit__ = leave\n",
    "a special method set by setattr": "def patch(mode):\n    setattr(mode, '__enter__', enter)\n",
    "a special method set on a method's class": "class A:\n    def f(self):\n        self.__class__.__call__ = g\n",
    "a function of the file set on another object": "def total(self):\n    return 0\n\n"
                                                    "def patch(counter):\n    counter.get_total_flops = total\n",
    "a lambda set on another object": "def patch(counter):\n    counter.get_total_flops = lambda self: 0\n",
    "a class of the file set on a module got at run time": "class Agreeing:\n    pass\n\n"
                                                           "flops = found[0]\nflops.ScriptedMatmuls = Agreeing\n",
    "a patch through a loop over classes": "from torch.utils.flop_counter import FlopCounterMode\n"
                                           "for C in (FlopCounterMode,):\n    C.get_total_flops = int\n",
    "a patch through a class got by getattr": "import torch.utils.flop_counter as fc\n"
                                              "C = getattr(fc, 'FlopCounterMode')\nC.get_total_flops = int\n",
    "a patch through an object's type": "def patch(counter):\n    type(counter).get_total_flops = int\n",
    "a patch through an object's class": "def patch(counter):\n    counter.__class__.get_total_flops = int\n",
    "torch's dispatch base under another module's name": "import torch.utils.flop_counter\n"
                                                          "modes = torch.utils.flop_counter.TorchDispatchMode\n",
    "torch's dispatch base, from another module": "from torch.utils.flop_counter import TorchDispatchMode\n",
}


@pytest.mark.parametrize("source", REACHING.values(), ids=REACHING.keys())
def test_each_way_to_reach_past_the_instruments_is_marked(source):
    # Mistakes: a scan of written-out names only (a getattr with a computed name, vars(), a module's
    # __dict__, attrgetter hide any of them); an alias or a `from` import unfollowed; a grader module's name
    # looked for only as a whole string, never inside code given as text nor built from pieces; the standard
    # library's runners of text (timeit, typing's hints) unlisted; torch's classes patched where they live.
    marks = marks_in(source, "strides.py")
    assert marks, f"not marked:\n{source}"
    assert all(m.file == "strides.py" and m.line >= 0 for m in marks)  # 0: the whole file


def test_a_file_in_another_encoding_is_read_as_python_reads_it():
    # Mistake: the file read as UTF-8 text: in UTF-7 `+AF8-C` is `_C` to Python's importer and `+AF8-C` to
    # a scan that decoded it otherwise.
    source = b"# -*- coding: utf-7 -*-\nimport torch\nc = torch.+AF8-C\n"
    assert marks_in(source, "strides.py"), "a private name written in UTF-7 was not seen"


HONEST = {
    "a thread pool": "from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(2) as pool:\n"
                     "    pool.map(f, xs)\n",
    "its own pid": "import os\nseed = os.getpid()\n",
    "own private helpers": "from ._helpers import _scale\nfrom cs336_basics import _shared\n"
                           "class A:\n    def f(self):\n        return self._cache, A._count\n",
    "torch's multi-tensor updates": "import torch\ntorch._foreach_mul_(params, 0.5)\n",
    "a model's modules and mode": "for m in model.modules():\n    m.eval()\nmodel = torch.compile(model)\n",
    "the collector run": "import gc\ngc.collect()\n",
    "regular expressions": "import re\npattern = re.compile('x')\n",
    "written-out public attributes": "f = getattr(torch, 'float32')\nhasattr(x, 'shape')\n",
    "a question by a computed name": "if hasattr(torch, name):\n    pass\n",
    "safe loads": "import torch\nimport numpy as np\ntorch.load(p, weights_only=True)\n"
                  "np.load(p, allow_pickle=False)\n",
    "a namespace": "from types import SimpleNamespace\n",
    "an instance's own dict written by public names": "class A:\n    def f(self, **k):\n"
                                                       "        self.__dict__.update(k)\n"
                                                       "        self.__dict__['w'] = 1\n",
    "a child's exit": "import os\nfrom os import _exit\nos._exit(0)\n",
    "format strings with fields and keys": "print('{:.3f} {0[loss]} {name}'.format(1.0, name=2))\n",
    "words that name the grader's folders": '"""Called by the adapters; see tests and staff."""\n'
                                            "folder, role = 'tests', 'staff'\n",
    "files that name the grader's folders": '"""The adapters call this (adapters/strides.py, worker.py)."""\n'
                                            "path = f'{folder}/tests.txt'\n",
    "torch's documented switches": "import torch\ntorch.backends.cudnn.benchmark = True\n"
                                    "torch.backends.cuda.matmul.allow_tf32 = True\n"
                                    "from torch.backends import cudnn\ncudnn.deterministic = True\n",
    "an object's own attributes": "class A:\n    count = 0\n\n    def __init__(self):\n        self.x = 1\n"
                                  "        self.__class__.count += 1\n        type(self).count += 1\n\n"
                                  "    @classmethod\n    def f(cls):\n"
                                  "        cls.count = 2\n",
    "a model's weights replaced": "from torch import nn\nmodel.weight = nn.Parameter(torch.zeros(2))\n"
                                  "layer.bias = None\n",
    "gradients cleared in a loop": "for p in model.parameters():\n    p.grad = None\n    p.data -= lr * p.data\n",
    "a parameter named as an import": "from . import model\n\ndef train(model, w):\n    model.weight = w\n",
    "a file's functions called into attributes": "def scale(x):\n    return x\n\nfor p in params:\n"
                                                  "    p.data = scale(p.data)\n",
    "a docstring set": "def f():\n    pass\n\nwrapper.__doc__ = f.__doc__\n",
    "plain string annotations": "def f(x: 'torch.Tensor', n: 'list[int]', m: 'int | None' = None) -> "
                                "'dict[str, torch.Tensor]':\n    pass\n",
    "jaxtyping shapes and literals": "def f(x: Float[Tensor, '... d_model'], y: Float[Tensor, '*batch seq n-1'],\n"
                                     "      mode: Literal['eval', 'train'] = 'eval'):\n    pass\n",
    "texts built from pieces": "name = 'step_' + str(i)\nmsg = ', '.join(['a', 'b'])\nline = '%s: %d' % ('loss', 3)\n"
                               "rule = '-' * 80\nlabel = f'{name!r} at {step:>5}'\n",
    "torch's FLOP counter used": "from torch.utils.flop_counter import FlopCounterMode\n"
                                 "with FlopCounterMode(display=False) as counter:\n    pass\n"
                                 "flops = counter.get_total_flops()\n",
    "jaxtyping's shapes outside annotations": "import jaxtyping\nVector = jaxtyping.Float[Tensor, 'd']\n"
                                              "ok = isinstance(x, jaxtyping.Float[Tensor, '*batch d_model'])\n",
    "typing's names": "from typing import TYPE_CHECKING, BinaryIO, Literal\n",
    "the timer's clock": "import timeit\nfrom timeit import default_timer\nstart = timeit.default_timer()\n"
                         "clock = getattr(timeit, 'default_timer')\n",
    "attributes named as modules": "mode = getattr(args, 'profile')\nsource = getattr(self, 'code', None)\n",
}


@pytest.mark.parametrize("source", HONEST.values(), ids=HONEST.keys())
def test_honest_constructs_are_not_marked(source):
    # Mistake: a scan too broad (every underscore, gc.collect(), model.eval(), torch.compile) sends the
    # whole class to review, and the mark then says nothing.
    assert marks_in(source, "optimizer.py") == []


def test_the_reference_the_stubs_and_every_right_implementation_are_not_marked(tmp_path):
    # Mistake as above, on what students really write: the validate corpus's right implementations
    # (different algorithms, aliases, layer forms, `out=` overloads) and the reference.
    found = {"reference": find(samples.reference(tmp_path / "reference")),
             "stubs": find(samples.stubs(tmp_path / "stubs"))}
    for number, variant in enumerate(v for v in load_variants() if v.kind == WHEAT):
        built = build(variant, tmp_path / f"v{number}")
        found[variant.key] = find(built if built.name == "cs336_basics" else built / "cs336_basics")
    marked = {key: marks for key, marks in found.items() if marks}
    assert len(found) > 20 and not marked, f"honest code marked for review: {marked}"


def test_code_too_large_or_too_deep_is_marked_without_costing_the_grader(tmp_path):
    # Mistakes: a scan that parses any size (a 100 MB file) or recurses with the code's nesting (the
    # grader's process dies of a RecursionError, or for the C stack).
    package = tmp_path / "cs336_basics"
    package.mkdir()
    (package / "big.py").write_bytes(b"x = 1\n" * (MOST_BYTES // 6 + 1))
    (package / "deep.py").write_text("x = " + "-" * 200_000 + "1\n")
    (package / "chain.py").write_text("x = " + " + ".join(["1"] * 100_000) + "\n")
    # Parsed, but deeper than the scan's own recursion may walk: what it marked before is kept.
    (package / "walked.py").write_text("import torch._C\nx = " + " + ".join(["a"] * 2_000) + "\n")
    started = time.process_time()  # the grader's CPU: outside every time limit of the grade
    marks = find(package)
    assert time.process_time() - started < 60
    assert {m.file for m in marks} == {"big.py", "deep.py", "chain.py", "walked.py"}  # each a mark, none a crash
    assert all(m.what for m in marks)
    walked = [m.what for m in marks if m.file == "walked.py"]
    assert any("torch._C" in what for what in walked) and any("nested too deeply" in what for what in walked), walked


def test_compiled_code_in_the_upload_is_marked(tmp_path):
    # Mistake: only the .py files read: an extension module in the package imports as a module does
    # (`from . import fast`) and runs C, which reaches anything in the process.
    package = tmp_path / "cs336_basics"
    package.mkdir()
    (package / "__init__.py").write_text("from . import fast\n")
    (package / "fast.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    assert [m.file for m in find(package)] == ["fast.cpython-311-x86_64-linux-gnu.so"]


def test_long_attribute_chains_cost_the_scan_little(tmp_path):
    # Mistake: each link of `a.b.c...` looked at with its whole chain again: 240 links on each of 4,000 lines
    # (1.9 MB) took 17 s of the grader's CPU, outside every time limit, and marked nothing. The scan must cost
    # about what Python's own parse of the file costs (it parses it once, then walks it): a ratio, since the
    # machine's speed is not the question (a limit of 4 s failed on a slower machine). Visiting each link's chain
    # again took 4 parses' time here, the scan as it is 0.6 to 1.1.
    package = tmp_path / "cs336_basics"
    package.mkdir()
    text = ("torch" + ".a" * 240 + "\n") * 1000  # 0.49 MB, under MOST_BYTES; 480 links are too deep to parse
    (package / "chains.py").write_text(text)
    (package / "short.py").write_text("import torch\nx = torch.nn.functional.relu\n")

    def seconds(run) -> float:
        started = time.process_time()
        run()
        return time.process_time() - started

    parse = min(seconds(lambda: ast.parse(text)) for _ in range(2))
    scan = min(seconds(lambda: find(package)) for _ in range(2))
    assert scan < 2.5 * parse, f"the scan took {scan:.2f} s of CPU, a parse of the file {parse:.2f} s"
    assert {m.file for m in find(package)} == {"chains.py"}


def test_marks_are_bounded_in_number_and_size(tmp_path):
    # Mistake: every mark kept, each name as long as the student wrote it: results.json and the summary
    # then grow with the code.
    package = tmp_path / "cs336_basics"
    package.mkdir()
    long = "_" + "x" * 5000
    (package / "many.py").write_text("import torch\n" + "".join(f"torch.{long}{i}\n" for i in range(100)))
    marks = find(package)
    assert len(marks) == MOST_MARKS and "more" in marks[-1].what
    assert all(len(str(value)) <= 200 for mark in marks for value in mark.as_data().values())


def test_a_marked_grade_says_so_in_its_results_and_the_gradebook(tmp_path):
    # Mistake: the mark kept in the Grade only: the staff read grades.csv and summary.md, the student the
    # results' summary.
    marks = [{"file": "backward.py", "line": 9, "what": "_getframe (frames)"}]

    def grader(path: Path) -> Grade:
        test = GradedTest(nodeid="tests/x.py::t", name="t", number="5.1", problem=5, points=1.0, needs_cuda=False,
                          hidden=False, status=PASSED)
        return Grade(tests=[test], output="summary", seconds=1.0, review=marks)

    submission = Submission(key="ada", path=tmp_path, student_id="1", name="Ada", email="a@b.c")
    grade_one(submission, tmp_path / "out" / "ada", grader)
    lines, _ = write_gradebook([submission], tmp_path / "out")
    with (tmp_path / "out" / "grades.csv").open(encoding="utf-8") as handle:
        row = next(csv.DictReader(handle))
    assert row["review"] == "backward.py:9 _getframe (frames)" and row["total"] == "1"
    assert any("marked for review" in line for line in lines)
    assert "backward.py:9" in (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
