"""Correct answers written with ordinary Python idioms that look like tampering only to a reader who
judges a call by its name: setattr, getattr and vars() on the student's own objects, globals() read,
eval of a constant expression, importlib.import_module("numpy"), files written in the notebook's own
folder or a temporary one, frozen dataclasses, __slots__, properties, closures, partials, ...

Each Idiom is an answer cell's whole source, as a student writes it (the cell replaces the
solution's). tests/test_audit.py audits every one (no finding, no caution); the graded class
(tests/grading_class.py) hands them in as the student "idioms", who must score full marks.
SETATTR_CACHE is a correct Exercise 10.6 whose cache sets its attributes with setattr (the student
"setattr-cache", full marks); SETATTR_SLIP a wrong Exercise 10.1 that uses setattr (the student
"setattr-slip": graded, its slip named, the rest of the lesson untouched).
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Idiom:
    lesson: str  # the lesson's number, "01"
    cell: str  # the grade id of the answer cell it replaces
    idioms: str  # what it shows
    source: str  # the answer cell, as written


IDIOMS = [
    Idiom("01", "softmax", "functools.partial; setattr/getattr on the student's own function (a call counter)", '''\
import functools


def _normalise(e, axis):
    return e / e.sum(axis=axis, keepdims=True)


def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    setattr(softmax, "calls", getattr(softmax, "calls", 0) + 1)  # how often the tests call me
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return functools.partial(_normalise, axis=axis)(e)
'''),
    Idiom("01", "scaled_dot_product_attention",
          'importlib.import_module("numpy"); eval of a constant expression; globals() read', '''\
import importlib

xp = importlib.import_module("numpy")  # the same NumPy, imported by name
HALF = eval("1 / 2")  # the power of d_k in the scaling


def scaled_dot_product_attention(Q, K, V, mask=None):
    """softmax(Q K^T / sqrt(d_k) + mask) V."""
    scores = Q @ xp.swapaxes(K, -1, -2) / Q.shape[-1] ** HALF
    if mask is not None:
        scores = scores + mask
    weights = globals()["softmax"](scores, axis=-1)  # my softmax, from Exercise 1.1
    return weights @ V, weights
'''),
    Idiom("01", "sinusoidal_positions",
          'open("scratch.txt", "w"); np.save then np.load in the notebook\'s folder; tempfile', '''\
import os
import tempfile


def sinusoidal_positions(n, d):
    """Fixed sinusoidal position encodings, (n, d)."""
    angles = np.arange(n)[:, None] / np.power(10000.0, np.arange(0, d, 2) / d)
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d // 2])
    np.save("pe.npy", pe)  # a scratch copy in my own folder, read back
    with open("scratch.txt", "w") as log:
        log.write(f"PE {n} x {d}\\n")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "pe.npy")
        np.save(path, np.load("pe.npy"))
        return np.load(path)
'''),
    Idiom("02", "rms_norm", "types.SimpleNamespace; vars() and setattr on it", '''\
from types import SimpleNamespace

DEFAULTS = SimpleNamespace(eps=1e-6, axis=-1)


def rms_norm(x, gamma, eps=1e-6):
    """RMSNorm over the last axis."""
    cfg = SimpleNamespace(**vars(DEFAULTS))
    setattr(cfg, "eps", eps)
    rms = np.sqrt(np.mean(x * x, axis=cfg.axis, keepdims=True) + cfg.eps)
    return x / rms * gamma
'''),
    Idiom("02", "gelu", "a closure that makes the function", '''\
def make_gelu(c=0.044715):
    root = np.sqrt(2.0 / np.pi)

    def gelu(x):
        """GELU, tanh form, elementwise."""
        return 0.5 * x * (1.0 + np.tanh(root * (x + c * x**3)))

    return gelu


gelu = make_gelu()
'''),
    Idiom("02", "multi_head_attention",
          "setattr in a loop in __init__; getattr of its own weights; a property; __call__ assigned in the class body",
          '''\
class MultiHeadAttention:
    """Multi-head attention, for self-attention and cross-attention."""

    def __init__(self, d_model, n_heads, rng=None):
        if d_model % n_heads:
            raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
        rng = np.random.default_rng(rng)
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        for name in ("W_q", "W_k", "W_v", "W_o"):
            setattr(self, name, rng.normal(0.0, 1.0 / np.sqrt(d_model), size=(d_model, d_model)))

    @property
    def shape_of_heads(self):
        return self.n_heads, self.d_k

    def split(self, x):  # (..., T, d_model) -> (..., h, T, d_k)
        return np.swapaxes(x.reshape(*x.shape[:-1], *self.shape_of_heads), -2, -3)

    def forward(self, query_input, key_value_input=None, mask=None):
        kv = query_input if key_value_input is None else key_value_input
        Q, K, V = (self.split(x @ getattr(self, f"W_{c}")) for x, c in ((query_input, "q"), (kv, "k"), (kv, "v")))
        heads, weights = scaled_dot_product_attention(Q, K, V, mask)
        merged = np.swapaxes(heads, -2, -3)
        return merged.reshape(*merged.shape[:-2], self.d_model) @ self.W_o, weights

    __call__ = forward
'''),
    Idiom("02", "feed_forward", "__slots__; operator.attrgetter of its own attributes", '''\
from operator import attrgetter

weights_of = attrgetter("W1", "b1", "W2", "b2")


class FeedForward:
    """Position-wise feed-forward network: GELU(x W1 + b1) W2 + b2."""

    __slots__ = ("d_model", "d_ff", "W1", "b1", "W2", "b2")

    def __init__(self, d_model, d_ff, rng=None):
        rng = np.random.default_rng(rng)
        self.d_model, self.d_ff = d_model, d_ff
        self.W1 = rng.normal(0.0, 1.0 / np.sqrt(d_model), size=(d_model, d_ff))
        self.b1 = np.zeros(d_ff)
        self.W2 = rng.normal(0.0, 1.0 / np.sqrt(d_ff), size=(d_ff, d_model))
        self.b2 = np.zeros(d_model)

    def __call__(self, x):
        W1, b1, W2, b2 = weights_of(self)
        return gelu(x @ W1 + b1) @ W2 + b2
'''),
    Idiom("02", "encoder_block", "vars() of its own object", '''\
class EncoderBlock:
    """Pre-norm encoder block."""

    def __init__(self, d_model, n_heads, d_ff, rng=None):
        rng = np.random.default_rng(rng)
        self.d_model = d_model
        self.self_attn = MultiHeadAttention(d_model, n_heads, rng)
        self.ffn = FeedForward(d_model, d_ff, rng)
        self.norm1_gamma = np.ones(d_model)
        self.norm2_gamma = np.ones(d_model)

    def __call__(self, x, mask=None):
        parts = vars(self)  # my own attributes, by name
        attn_out, _ = parts["self_attn"](rms_norm(x, parts["norm1_gamma"]), mask=mask)
        x = x + attn_out
        return x + parts["ffn"](rms_norm(x, parts["norm2_gamma"]))
'''),
    Idiom("03", "create_causal_mask", "a frozen dataclass that sets a field in __post_init__ with object.__setattr__", '''\
from dataclasses import dataclass


@dataclass(frozen=True)
class MaskValues:
    visible: float = 0
    hidden: float = -np.inf

    def __post_init__(self):
        object.__setattr__(self, "visible", float(self.visible))  # frozen: set once, here


VALUES = MaskValues()


def create_causal_mask(seq_len):
    """(m, m): 0.0 on and below the diagonal, -inf above it."""
    future = np.triu(np.ones((seq_len, seq_len), dtype=bool), k=1)
    return np.where(future, VALUES.hidden, VALUES.visible)
'''),
    Idiom("03", "decoder_mask", "globals() read; copy.deepcopy", '''\
import copy


def decoder_mask(tgt_in, pad_id):
    """Causal plus target padding, (..., 1, m, m)."""
    tgt_in = copy.deepcopy(np.asarray(tgt_in))  # my own copy
    causal = globals().get("create_causal_mask")
    return causal(tgt_in.shape[-1]) + padding_mask(tgt_in, pad_id)
'''),
    Idiom("03", "causal_self_attention", "operator.matmul; types.SimpleNamespace; a dict comprehension", '''\
import operator
from types import SimpleNamespace


def causal_self_attention(x, W_q, W_k, W_v):
    """One head of causal self-attention."""
    p = SimpleNamespace(**{name: operator.matmul(x, W) for name, W in (("Q", W_q), ("K", W_k), ("V", W_v))})
    scores = p.Q @ np.swapaxes(p.K, -1, -2) / np.sqrt(p.Q.shape[-1]) + create_causal_mask(x.shape[-2])
    weights = softmax(scores, axis=-1)
    return weights @ p.V, weights
'''),
    Idiom("03", "output_logits", "print to stderr, in the answer cell and inside the function", '''\
import sys


def output_logits(h, E):
    """The tied output head: h @ E.T."""
    print("output_logits:", h.shape, "->", h.shape[:-1] + E.shape[:1], file=sys.stderr)
    return h @ E.T


print("output_logits defined", file=sys.stderr)
'''),
    Idiom("06", "shift_right", "operator.itemgetter", '''\
import operator

drop_last = operator.itemgetter((Ellipsis, slice(None, -1)))


def shift_right(targets, bos_id):
    """BOS first, the last target dropped."""
    targets = np.asarray(targets)
    bos = np.full(targets.shape[:-1] + (1,), bos_id, dtype=targets.dtype)
    return np.concatenate([bos, drop_last(targets)], axis=-1)
'''),
    Idiom("06", "embed", "operator.attrgetter with a dotted name", '''\
from operator import attrgetter

sizes = attrgetter("config.d_model", "embedding")


def embed(model, tokens):
    """sqrt(d_model) * E[tokens] + PE."""
    d, E = sizes(model)
    return E[tokens] * np.sqrt(d) + sinusoidal_positions(tokens.shape[-1], d)
'''),
    Idiom("06", "parameter_count", "a dataclass with a class attribute and properties", '''\
from dataclasses import dataclass


@dataclass
class Sizes:
    V: int
    d: int
    d_ff: int
    MATRICES_PER_ATTENTION = 4  # a class attribute: W_q, W_k, W_v, W_o

    @property
    def attention(self):
        return self.MATRICES_PER_ATTENTION * self.d * self.d

    @property
    def ffn(self):
        return 2 * self.d * self.d_ff + self.d_ff + self.d


def parameter_count(vocab_size, d_model, d_ff, n_encoder_layers, n_decoder_layers=None):
    """The number of [LEARNED] numbers in a Seq2Seq."""
    s = Sizes(vocab_size, d_model, d_ff)
    n_dec = n_encoder_layers if n_decoder_layers is None else n_decoder_layers
    encoder_block = s.attention + s.ffn + 2 * s.d
    decoder_block = 2 * s.attention + s.ffn + 3 * s.d
    return s.V * s.d + n_encoder_layers * encoder_block + n_dec * decoder_block + 2 * s.d
'''),
    Idiom("08", "adam_update", "copy.copy; a SimpleNamespace of the hyper-parameters", '''\
import copy
from types import SimpleNamespace


def adam_update(param, grad, m, v, t, lr, beta1=0.9, beta2=0.98, eps=1e-9):
    """One Adam step; the inputs are left unchanged."""
    h = SimpleNamespace(lr=lr, beta1=beta1, beta2=beta2, eps=eps)
    m = h.beta1 * copy.copy(m) + (1.0 - h.beta1) * grad
    v = h.beta2 * copy.copy(v) + (1.0 - h.beta2) * grad * grad
    m_hat, v_hat = m / (1.0 - h.beta1**t), v / (1.0 - h.beta2**t)
    return param - h.lr * m_hat / (np.sqrt(v_hat) + h.eps), m, v
'''),
    Idiom("09", "greedy_decode", "a state object with __slots__ filled by setattr", '''\
class DecodeState:
    __slots__ = ("tgt_in", "out", "done")

    def __init__(self, **values):
        for name, value in values.items():
            setattr(self, name, value)


def greedy_decode(model, src, bos_id, eos_id, max_len):
    """The most probable token at every step, from <bos> until <eos> or max_len tokens."""
    src = np.asarray(src)
    single = src.ndim == 1
    src = src[None] if single else src
    pad, B = model.config.pad_id, src.shape[0]
    H_enc, src_mask = model.encode(src)
    s = DecodeState(tgt_in=np.full((B, 1), bos_id), out=np.zeros((B, 0), dtype=np.int64), done=np.zeros(B, bool))
    for _ in range(max_len):
        logits = model.decode(s.tgt_in, H_enc, src_mask)[:, -1].copy()
        logits[:, [pad, bos_id]] = -np.inf
        token = np.where(s.done, pad, logits.argmax(axis=-1))
        s.out = np.concatenate([s.out, token[:, None]], axis=1)
        s.done = s.done | (token == eos_id)
        if s.done.all():
            break
        s.tgt_in = np.concatenate([s.tgt_in, token[:, None]], axis=1)
    return s.out[0] if single else s.out
'''),
    Idiom("10", "load_numpy_parameters", "torch.save of a scratch checkpoint in the notebook's folder; getattr of a method",
          '''\
def load_numpy_parameters(module, params):
    """Copy NumPy arrays into a torch module's parameters by name, in place."""
    own = dict(module.named_parameters())
    missing, extra = sorted(set(own) - set(params)), sorted(set(params) - set(own))
    if missing or extra:
        raise ValueError(f"parameter names differ: missing {missing}, unexpected {extra}")
    torch.save(module.state_dict(), "before_loading.pt")  # a scratch copy, in case I want it back
    with torch.no_grad():
        for name, p in own.items():
            value = np.asarray(params[name])
            if tuple(p.shape) != value.shape:
                raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {value.shape}")
            getattr(p, "copy_")(torch.from_numpy(value))
    return module
'''),
    Idiom("10", "lr_at", "a callable object whose __call__ is assigned in the class body", '''\
class Schedule:
    """Linear warm-up, then a cosine decay to min_lr."""

    def at(self, step, peak_lr, warmup_steps, total_steps, min_lr=0.0):
        if step <= warmup_steps:
            return peak_lr * step / warmup_steps
        progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
        return min_lr + (peak_lr - min_lr) * (1.0 + math.cos(math.pi * progress)) / 2

    __call__ = at


lr_at = Schedule()
'''),
    Idiom("10", "make_optimizer", "vars() of a SimpleNamespace as keyword arguments", '''\
import types


def make_optimizer(model, lr, weight_decay, betas):
    """AdamW with weight decay on the matrices only."""
    groups = {True: [], False: []}
    for p in model.parameters():
        groups[p.ndim >= 2].append(p)
    options = types.SimpleNamespace(lr=lr, betas=betas)
    return torch.optim.AdamW([{"params": groups[True], "weight_decay": weight_decay},
                              {"params": groups[False], "weight_decay": 0.0}], **vars(options))
'''),
    Idiom("10", "exact_match", "a contextlib.contextmanager; getattr of the model's own flag", '''\
import contextlib


@contextlib.contextmanager
def evaluating(model):
    was = getattr(model, "training")
    model.eval()
    try:
        yield model
    finally:
        model.train(was)


def exact_match(model, src, tgt, bos_id, eos_id, max_len):
    """The fraction of sequences whose greedy output is exactly the target."""
    with evaluating(model), torch.no_grad():
        pred = model.greedy_decode(src, bos_id, eos_id, max_len)
    pad = model.config.pad_id
    width = max(pred.shape[1], tgt.shape[1])
    pred = F.pad(pred, (0, width - pred.shape[1]), value=pad)
    tgt = F.pad(tgt, (0, width - tgt.shape[1]), value=pad)
    return (pred == tgt).all(dim=1).double().mean().item()
'''),
]

SETATTR_CACHE = Idiom("10", "greedy_decode_cached", "a cache object whose attributes are set with setattr", '''\
class BlockCache:
    """One decoder block's keys and values, grown by one position per step."""

    def __init__(self):
        for name in ("K", "V"):
            setattr(self, name, None)

    def extend(self, K, V):
        for name, new in (("K", K), ("V", V)):
            old = getattr(self, name)
            setattr(self, name, new if old is None else torch.cat([old, new], dim=-2))
        return self.K, self.V

    def keep(self, rows):
        for name in ("K", "V"):
            setattr(self, name, getattr(self, name)[rows])


def greedy_decode_cached(model, src, bos_id, eos_id, max_len):
    """Greedy decoding with a KV cache: only the newest token goes through the decoder at each step."""
    from encdec import sinusoidal_positions

    cfg = model.config
    h, d_k, pad = cfg.n_heads, cfg.d_model // cfg.n_heads, cfg.pad_id

    def rms(x, gamma):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + cfg.eps) * gamma

    def split(x):
        return x.view(*x.shape[:-1], h, d_k).transpose(-2, -3)

    def attention(q, k, v, mask=None):
        s = q @ k.transpose(-1, -2) / math.sqrt(d_k) + (0 if mask is None else mask)
        return torch.softmax(s, -1) @ v

    with torch.no_grad():
        H_enc, src_mask = model.encode(src)
        cross = [(split(H_enc @ b.cross_attn.W_k), split(H_enc @ b.cross_attn.W_v)) for b in model.decoder]
        caches = [BlockCache() for _ in model.decoder]
        rows = torch.arange(src.shape[0])  # the rows still generating
        token = torch.full((src.shape[0],), bos_id, dtype=torch.long)
        steps = []
        for t in range(max_len):
            pos = torch.from_numpy(sinusoidal_positions(t + 1, cfg.d_model)[t]).to(H_enc.dtype)
            x = (model.embedding[token[rows]] * math.sqrt(cfg.d_model) + pos)[:, None]
            for i, b in enumerate(model.decoder):
                a = rms(x, b.norm1_gamma)
                K, V = caches[i].extend(split(a @ b.self_attn.W_k), split(a @ b.self_attn.W_v))
                o = attention(split(a @ b.self_attn.W_q), K, V)
                x = x + o.transpose(-2, -3).reshape(len(rows), 1, -1) @ b.self_attn.W_o
                a = rms(x, b.norm2_gamma)
                o = attention(split(a @ b.cross_attn.W_q), cross[i][0][rows], cross[i][1][rows], src_mask[rows])
                x = x + o.transpose(-2, -3).reshape(len(rows), 1, -1) @ b.cross_attn.W_o
                x = x + b.ffn(rms(x, b.norm3_gamma))
            logits = rms(x[:, 0], model.decoder_norm_gamma) @ model.embedding.T
            logits[:, pad] = logits[:, bos_id] = -math.inf
            step = torch.full((src.shape[0],), pad, dtype=torch.long)
            step[rows] = logits.argmax(-1)
            steps.append(step)
            token = step
            keep = step[rows] != eos_id
            rows = rows[keep]
            if len(rows) == 0:
                break
            for c in caches:
                c.keep(keep)
        return torch.stack(steps, dim=1)
''')

SETATTR_SLIP = Idiom("10", "load_numpy_parameters",
                     "setattr of a new nn.Parameter: a wrong answer (catalog: new_parameters) that uses setattr", '''\
def load_numpy_parameters(module, params):
    """Copy NumPy arrays into a torch module's parameters by name."""
    own = dict(module.named_parameters())
    if set(own) != set(params):
        raise ValueError(f"parameter names differ: {sorted(set(own) ^ set(params))}")
    for name, p in own.items():
        if tuple(p.shape) != params[name].shape:
            raise ValueError(f"{name}: torch shape {tuple(p.shape)} vs NumPy shape {params[name].shape}")
        *path, leaf = name.split(".")
        owner = module.get_submodule(".".join(path))
        setattr(owner, leaf, torch.nn.Parameter(torch.tensor(params[name], dtype=p.dtype, device=p.device)))
    return module
''')


def for_lesson(lesson):
    """The idioms whose answers belong to a lesson (its name, e.g. "01_attention")."""
    return [i for i in IDIOMS if lesson.startswith(i.lesson)]
