"""fsdp2's cached model state dict (model_state.py) holds what a save must write: the
parameters' current values while they keep their storage, and a dict made again whenever a
parameter got new storage or a module got a new parameter, so a reused dict never saves stale
bytes."""

import sys
import unittest

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)

import torch  # noqa: E402

from trainlock_engine.model_state import CachedModelState  # noqa: E402


def a_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))


def cached(model):
    state = CachedModelState(lambda: {k: v.detach() for k, v in model.state_dict(keep_vars=True).items()},
                             model.parameters)
    state.refresh()
    return state


class Sharded:
    """A DTensor as far as the cache sees it: a parameter over a local shard."""

    def __init__(self, local):
        self._local_tensor = local


class CachedModelStateTest(unittest.TestCase):
    def test_an_in_place_optimizer_step_shows_in_the_cached_dict(self):
        model = a_model()
        state = cached(model)
        made = state.get()
        model(torch.ones(1, 4)).sum().backward()
        torch.optim.SGD(model.parameters(), lr=0.5).step()
        again = state.get()
        self.assertIs(again, made)
        self.assertEqual(state.made, 1)
        for name, value in model.state_dict().items():
            self.assertTrue(torch.equal(again[name], value), name)

    def test_a_parameter_given_new_storage_makes_the_dict_again(self):
        model = a_model()
        state = cached(model)
        old = state.get()
        model[0].weight.data = torch.full((3, 4), 7.0)  # as a re-padding or an assigning load does
        new = state.get()
        self.assertEqual(state.made, 2)
        self.assertTrue(torch.equal(new["0.weight"], torch.full((3, 4), 7.0)))
        self.assertFalse(torch.equal(old["0.weight"], new["0.weight"]))

    def test_a_dict_made_again_says_which_parameter_changed_how(self):
        model = a_model()
        state = cached(model)
        model[1].weight.data = torch.zeros(2, 3)
        state.get()
        self.assertEqual(state.remade_because, "parameter 2 has other storage")
        model[0].bias = torch.nn.Parameter(torch.zeros(3))
        state.get()
        self.assertEqual(state.remade_because, "parameter 1 is another object")

    def test_a_module_given_a_new_parameter_makes_the_dict_again(self):
        model = a_model()
        state = cached(model)
        model[1].bias = torch.nn.Parameter(torch.tensor([5.0, 6.0]))
        self.assertFalse(state.is_current())
        self.assertTrue(torch.equal(state.get()["1.bias"], torch.tensor([5.0, 6.0])))

    def test_a_parameter_removed_makes_the_dict_again(self):
        model = a_model()
        state = cached(model)
        model[1].bias = None
        self.assertFalse(state.is_current())
        self.assertNotIn("1.bias", state.get())

    def test_a_shard_given_a_new_local_tensor_makes_the_dict_again(self):
        shard = Sharded(torch.zeros(4))
        state = CachedModelState(lambda: {"w": shard._local_tensor}, lambda: [shard])
        state.refresh()
        self.assertTrue(state.is_current())
        shard._local_tensor = torch.ones(4)  # FSDP2's reset_sharded_param after re-padding
        self.assertTrue(torch.equal(state.get()["w"], torch.ones(4)))
        self.assertEqual(state.made, 2)

    def test_a_forgotten_dict_is_made_at_the_next_get(self):
        model = a_model()
        state = cached(model)
        state.forget()
        self.assertFalse(state.is_current())
        state.get()
        self.assertEqual(state.made, 2)

    def test_nothing_is_cached_before_the_first_make(self):
        model = a_model()
        state = CachedModelState(lambda: dict(model.state_dict()), model.parameters)
        self.assertFalse(state.is_current())
        self.assertIn("0.weight", state.get())
        self.assertEqual(state.made, 1)


if __name__ == "__main__":
    unittest.main()
