"""The adapters check what a student's function returned against the type it promises, and never
convert it: a 0-d tensor where a float is promised, a float where an int is, or 1 where a
bool is, fails with a message that names the function, what came back and what to do.

Each case below was hidden by the float(), int() or bool() the adapters used to apply; the chaff
`p01-chaff-tensor-bytes-from-bits-as-a-float`, `p04-chaff-mfu-as-a-0-d-tensor` and
`p06-chaff-init-std-as-a-0-d-tensor` are the same mistakes in whole modules.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from adapters._returns import ReturnTypeError, exact_bool, exact_float, exact_int


@pytest.mark.parametrize("value", [0.5, 3, float("nan"), -0.0])
def test_a_python_number_where_a_float_is_promised_comes_back_as_it_was(value):
    got = exact_float(value, "mfu")
    assert type(got) is type(value) and (got == value or got != got)


def test_numpy_scalars_become_the_equal_python_number():
    assert type(exact_float(np.float32(0.25), "mfu")) is float and exact_float(np.float32(0.25), "mfu") == 0.25
    assert exact_int(np.int64(2**62 + 1), "tensor_bytes") == 2**62 + 1
    assert exact_bool(np.bool_(True), "can_view") is True


@pytest.mark.parametrize("value, shown", [(torch.tensor(0.5, dtype=torch.float64), "a torch.Tensor (shape (), "
                                          "torch.float64)"), (True, "a bool (True)"), ("0.5", "a str")])
def test_a_tensor_or_a_bool_where_a_float_is_promised_is_refused_with_what_came_back(value, shown):
    with pytest.raises(ReturnTypeError) as raised:
        exact_float(value, "mfu")
    message = str(raised.value)
    assert message.startswith(f"mfu returned {shown}, but promises a Python float"), message


@pytest.mark.parametrize("value, hint", [(96.0, "// rather than /"), (torch.tensor(96), "tensor.item()"),
                                         (False, "tensor.item()")])
def test_a_float_tensor_or_bool_where_an_int_is_promised_is_refused(value, hint):
    with pytest.raises(ReturnTypeError) as raised:
        exact_int(value, "tensor_bytes")
    assert "promises a Python int" in str(raised.value) and hint in str(raised.value)


@pytest.mark.parametrize("value", [1, 0, torch.tensor(True), None])
def test_anything_but_a_bool_where_a_bool_is_promised_is_refused(value):
    with pytest.raises(ReturnTypeError, match="promises a bool"):
        exact_bool(value, "can_view")

