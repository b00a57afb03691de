"""Exercise 10.1, load_numpy_parameters: the mistakes of the weight transfer from NumPy to torch."""

from .. import mistake


# -- Exercise 10.1 load_numpy_parameters -------------------------------------------------------------------
@mistake("load_numpy_parameters", "transposed",
         "the matrices are transposed on the way in, as if they were nn.Linear weights. nn.Linear "
         "stores (d_out, d_in) and computes x @ W.T; the course stores every W as (d_in, d_out) and "
         "computes x @ W, in NumPy and in torch alike: copy the arrays as they are.")
def load_numpy_parameters(module, params):
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    with torch.no_grad():
        for name, p in own.items():
            value = params[name].T if params[name].ndim == 2 else params[name]
            p.copy_(torch.from_numpy(value.copy()))
    return module


@mistake("load_numpy_parameters", "no_shape_check",
         "the names are checked but not the shapes: an array of the wrong shape reaches copy_, which raises "
         "a RuntimeError (or broadcasts a smaller array silently). Check every array's shape against its "
         "parameter's before copying, and raise a ValueError that names the parameter and both shapes.")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    with torch.no_grad():
        for name, p in own.items():
            p.copy_(torch.from_numpy(params[name]))
    return module


@mistake("load_numpy_parameters", "data_from_numpy",
         "`p.data = torch.from_numpy(value)` swaps in NumPy's own tensor: a float32 model gets "
         "float64 parameters, and each parameter now shares its memory with the NumPy array. Copy "
         "into the existing parameter instead, keeping its dtype and device: p.copy_(torch.from_numpy(value)) "
         "under torch.no_grad().")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    for name, p in own.items():
        if tuple(p.shape) != params[name].shape:
            raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {params[name].shape}")
        p.data = torch.from_numpy(params[name])
    return module


@mistake("load_numpy_parameters", "no_checks",
         "names and shapes are never checked: a parameter missing from the dict keeps its random "
         "initial value, and an unexpected name is silently ignored. Compare the two sets of names "
         "(and each pair of shapes) first, and raise a ValueError that names the difference.")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    with torch.no_grad():
        for name, value in params.items():
            if name in own:
                own[name].copy_(torch.from_numpy(value))
    return module


@mistake("load_numpy_parameters", "copy_with_grad",
         "an in-place copy into a parameter while autograd is recording: torch refuses to modify a "
         "leaf tensor that requires grad. Do the copies inside `with torch.no_grad():`.")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    for name, p in own.items():
        if tuple(p.shape) != params[name].shape:
            raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {params[name].shape}")
        p.copy_(torch.from_numpy(params[name]))
    return module


@mistake("load_numpy_parameters", "new_parameters",
         "every parameter is replaced by a new nn.Parameter. The values are right, but anything that "
         "holds the old tensors (an optimizer made before the copy, a DDP wrapper) keeps training "
         "those. Copy the values into the existing parameters with p.copy_(...) under torch.no_grad().")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    for name, p in own.items():
        if tuple(p.shape) != params[name].shape:
            raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {params[name].shape}")
        *path, leaf = name.split(".")
        owner = module.get_submodule(".".join(path))
        owner.register_parameter(leaf, torch.nn.Parameter(torch.tensor(params[name], dtype=p.dtype, device=p.device)))
    return module


# -- more shape-preserving slips (every shape still fits; only the values show them) -----------------------
@mistake("load_numpy_parameters", "matrices_only",
         "only the matrices are copied (parameters with p.ndim >= 2): the RMSNorm gains and the FFN biases "
         "keep their initial values. Copy every parameter, whatever its number of dimensions.")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    with torch.no_grad():
        for name, p in own.items():
            if tuple(p.shape) != params[name].shape:
                raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {params[name].shape}")
            if p.ndim >= 2:
                p.copy_(torch.from_numpy(params[name]))
    return module


@mistake("load_numpy_parameters", "embedding_not_copied",
         "the embedding is not copied (only the blocks' parameters and the final norms are): E keeps its "
         "random initial values, and with it the tied output head. Copy every parameter the dict names, "
         "`embedding` included.")
def load_numpy_parameters(module, params):  # noqa: F811
    import torch
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    with torch.no_grad():
        for name, p in own.items():
            if tuple(p.shape) != params[name].shape:
                raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {params[name].shape}")
            if name != "embedding":
                p.copy_(torch.from_numpy(params[name]))
    return module
