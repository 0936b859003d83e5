"""trainlock's Python engines: the trainers that run validate's round trip under a framework
(docs/validate.md, "Engines" and "The engine protocol (trainlock.engine/1)").

Run as `PYTHONPATH=validators/engines/python python3 -B -m trainlock_engine --engine NAME ...`
(-B: no bytecode files appear inside the package the lock pins); the coordinator starts it
isolated instead, as `python3 -I -S -B -u trainlock_engine/isolated.py ...` (isolated.py). Needs only the standard
library and torch >= 1.13; an engine imports its framework itself, lazily.

The common API an engine builds on (one concept per module):

    protocol    Emitter (events on the real stdout, rank 0 only), EngineError(kind, message,
                **extra) and the exit code of each kind (2 input/unsupported, 4 checkpoint,
                5 integrity/model/out_of_memory/non_finite_loss/training); its tables are
                protocol_generated, written from the C++ declaration (do not edit)
    cli         the option set and main(); process: one process's life (hello .. done|error),
                Context (opts, rank, world_size, local_rank, device, spec, emit, step)
    runtime     deterministic kernels, device choice, process group, barrier/broadcast helpers
    launch      --nproc P: P rank processes of itself; failures reported here for all ranks
    isolated    the coordinator's isolated start: sys.path is the package, the stdlib and the
                interpreter's own site-packages, no .pth file, no working directory
    spec        the spec file (trainlock.engine-spec/1) as checked dicts
    pinned      point-of-use verification of pinned files (`artifact` / kind `integrity`)
    safetensors_io, weights   pinned safetensors weights into a model by HF parameter name
    data        the token stream, WindowLoader (global position, eval windows), loader_for()
    model       the plain-PyTorch Llama (HF parameter names), causal_lm_loss, matmul_parameters
    hf_model    build_hf_llama(spec, emit): transformers' LlamaForCausalLM (lazy import),
                watch_logits_dtype(model)
    schedule    warmup + cosine learning rate (lambda_for(spec) for LambdaLR)
    rng         capture()/restore()/streams() of every RNG stream
    digests     the final state flattened (optimizer state by parameter name), and digests
                for in-process comparisons
    final_state the final state streamed into the safetensors file the coordinator digests
    commit      the commit marker: write_marker, latest_committed, verify, prune
    safe_load   torch.load for hostile checkpoint files (no arbitrary unpickling)
    measure     StepTimer, device_memory, step_flops, gather_rank_peaks, measurement()
    roundtrip   the round-trip driver and the Engine class an engine implements (build,
                train_step, eval_loss, save, load, full_state, measured_shape,
                matmul_parameters); run(ctx, EngineClass)
    engines/    one module per engine name, each with prepare(ctx) (import the framework,
                refuse what cannot run; before hello) and run(ctx); see engines/__init__.py

An engine whose framework owns the training loop (hf-trainer, lightning) can skip roundtrip's
Driver and use the pieces directly: data.loader_for, rng, commit.write_marker /
latest_committed, digests.flatten_state / digest_all, final_state.write, measure, and ctx.emit
for the events.
"""
