"""The model's sharded state dict, made once and handed to every save, as torchtitan's checkpoint
ModelWrapper keeps it (torchtitan/components/checkpoint.py: `cache_state_dict`, made again after
a load).

Why it may be reused: get_model_state_dict's values are the parameters' own tensors, detached
(for FSDP2, DTensors over each parameter's local shard), and the optimizer updates those in
place, so a dict made once holds each later save's values. Why it is checked at every save: FSDP2
can give a parameter a new local tensor (its lazy init re-pads an unevenly sharded one, a load
may assign), and a module may be given a new parameter; then the old dict would save stale
bytes. A save reuses the dict only while every parameter and buffer is the same object over the
same storage as when the dict was made; otherwise the dict is made again, in that save.

What makes it stale in a run that changes nothing: a forward pass outside training. FSDP2 keeps
the root module's parameters unsharded after a forward (its backward would gather them again),
so after an evaluation under no_grad the root's parameters are the unsharded ones until
something reshards them; fsdp2.py reshards after evaluating, as torchtitan's validator does.
"""


def _local_data_ptr(tensor):
    """The address of a tensor's storage on this rank (a DTensor's local shard)."""
    return getattr(tensor, "_local_tensor", tensor).data_ptr()


class CachedModelState:
    """make(): the model's state dict; named_tensors(): the model's (name, parameter or buffer)
    pairs, whose identity and storage decide whether a made dict is still the model's."""

    def __init__(self, make, named_tensors):
        self._make, self._named_tensors = make, named_tensors
        self._state, self._made_from = None, None
        self.made = 0  # how many times the dict was made: a phase note says when a save made it
        self.remade_because = ""  # why get() last made it again

    def _fingerprint(self):
        return [(name, t, _local_data_ptr(t)) for name, t in self._named_tensors()]

    def why_stale(self):
        """Why the made dict is not the model's now, the first difference found ("" when it
        is): a phase note says it, so a save that had to make the dict again says why."""
        if self._state is None:
            return "not made"
        now = self._fingerprint()
        if len(now) != len(self._made_from):
            return "%d parameters and buffers, %d when made" % (len(now), len(self._made_from))
        for (name, t, ptr), (made_name, made_t, made_ptr) in zip(now, self._made_from):
            if name != made_name:
                return "%s where %s was" % (name, made_name)
            if t is not made_t:
                return "%s is another object" % name
            if ptr != made_ptr:
                return "%s has other storage" % name
        return ""

    def is_current(self):
        return not self.why_stale()

    def refresh(self):
        """Makes the dict again (after a load, or outside a save, so that the save need not)."""
        self._state = self._make()
        self._made_from = self._fingerprint()  # after make(): its hooks may re-register parameters
        self.made += 1

    def forget(self):
        """Drops the dict (a load is about to change the parameters)."""
        self._state, self._made_from = None, None

    def get(self):
        """The model's state dict, made again first where the parameters changed under it
        (`remade_because` then says why)."""
        why = self.why_stale()
        if why:
            self.remade_because = why
            self.refresh()
        return self._state
