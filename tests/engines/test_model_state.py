"""fsdp2's cached model state dict (model_state.py) holds what a save must write: the
parameters' current values while they keep their storage, and a dict made again whenever a
parameter got new storage or a module got a new parameter, so a reused dict never saves stale
bytes."""

import itertools
import sys
import unittest

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)

import torch  # noqa: E402

from trainlock_engine.engines.fsdp2 import reshard_after_evaluation  # noqa: E402
from trainlock_engine.model_state import CachedModelState  # noqa: E402


def a_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))


def cached(model):
    state = CachedModelState(lambda: {k: v.detach() for k, v in model.state_dict(keep_vars=True).items()},
                             lambda: itertools.chain(model.named_parameters(), model.named_buffers()))
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
        self.assertEqual(state.remade_because, "1.weight has other storage")
        model[0].bias = torch.nn.Parameter(torch.zeros(3))
        state.get()
        self.assertEqual(state.remade_because, "0.bias is another object")

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
        state = CachedModelState(lambda: {"w": shard._local_tensor}, lambda: [("w", shard)])
        state.refresh()
        self.assertTrue(state.is_current())
        shard._local_tensor = torch.ones(4)  # FSDP2's reset_sharded_param after re-padding
        self.assertTrue(torch.equal(state.get()["w"], torch.ones(4)))
        self.assertEqual(state.made, 2)

    def test_a_buffer_given_another_tensor_makes_the_dict_again(self):
        model = torch.nn.BatchNorm1d(2)
        state = cached(model)
        model.running_mean = torch.tensor([3.0, 4.0])
        self.assertEqual(state.why_stale(), "running_mean is another object")
        self.assertTrue(torch.equal(state.get()["running_mean"], torch.tensor([3.0, 4.0])))

    def test_a_forgotten_dict_is_made_at_the_next_get(self):
        model = a_model()
        state = cached(model)
        state.forget()
        self.assertFalse(state.is_current())
        state.get()
        self.assertEqual(state.made, 2)

    def test_nothing_is_cached_before_the_first_make(self):
        model = a_model()
        state = CachedModelState(lambda: dict(model.state_dict()), model.named_parameters)
        self.assertFalse(state.is_current())
        self.assertIn("0.weight", state.get())
        self.assertEqual(state.made, 1)


class GatheringRoot(torch.nn.Module):
    """FSDP2's root as the cache sees it: a forward registers the gathered (unsharded) weight in
    place of the shard, as FSDPParam.to_unsharded does, and only reshard() (or a backward, not
    modelled) registers the shard again."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(2))
        self.__dict__["shard"] = self.weight  # kept, not registered: FSDPParam.sharded_param

    def forward(self, x):
        self.weight = torch.nn.Parameter(self.shard.detach().clone())
        return x * self.weight

    def reshard(self):
        self.weight = self.shard


class ReshardAfterEvaluationTest(unittest.TestCase):
    def test_every_fsdp_module_is_resharded_nested_ones_too(self):
        model = torch.nn.Sequential(GatheringRoot(), torch.nn.Sequential(torch.nn.Linear(2, 2), GatheringRoot()))
        with torch.no_grad():
            model[0](torch.ones(2)), model[1][1](torch.ones(2))
        reshard_after_evaluation(model, GatheringRoot)
        self.assertIs(model[0].weight, model[0].shard)
        self.assertIs(model[1][1].weight, model[1][1].shard)

    def test_an_evaluation_resharded_leaves_the_cached_state_current(self):
        root = GatheringRoot()
        state = CachedModelState(lambda: {"weight": root.weight.detach()}, root.named_parameters)
        state.refresh()
        with torch.no_grad():
            root(torch.ones(2))
        self.assertEqual(state.why_stale(), "weight is another object")  # what every save saw
        reshard_after_evaluation(root, GatheringRoot)
        self.assertTrue(state.is_current())


if __name__ == "__main__":
    unittest.main()
