"""The tutorials' own code, written out again (see the section below)."""
import numpy as np


# ---------------------------------------------------------------------------
# The tutorials' own code, written out again.
# These keep the tutorial's formulas exactly -- including the -1e9 fill of
# masked scores -- so tests can compare attnpy with what a reader of the
# tutorial would compute.
# ---------------------------------------------------------------------------

def tutorial_softmax(x, axis=-1):
    """The tutorial's numerically stable softmax."""
    exp_x = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return exp_x / np.sum(exp_x, axis=axis, keepdims=True)


def tutorial_scaled_dot_product_attention(Q, K, V, mask=None):
    """The tutorial's attention: scores / sqrt(d_k), masked scores := -1e9.

    A row that may see no key therefore gets uniform weights (every score
    is -1e9), which is attnpy's fully_masked="uniform".
    """
    d_k = Q.shape[-1]
    scores = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask == 0, -1e9, scores)
    attention_weights = tutorial_softmax(scores, axis=-1)
    output = np.matmul(attention_weights, V)
    return output, attention_weights


def tutorial_create_causal_mask(seq_len):
    """The tutorial's lower-triangular 0/1 mask."""
    return np.tril(np.ones((seq_len, seq_len)))


def tutorial_positional_encoding(max_len, d_model):
    """The tutorial's sinusoidal encoding (even d_model only, as written)."""
    position = np.arange(max_len)[:, np.newaxis]
    div_term = np.exp(np.arange(0, d_model, 2) * -(np.log(10000.0) / d_model))
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return pe


def tutorial_split_heads(x, num_heads):
    """The tutorial's split: (batch, seq, d_model) -> (batch, heads, seq,
    d_k)."""
    batch_size, seq_len, d_model = x.shape
    x = x.reshape(batch_size, seq_len, num_heads, d_model // num_heads)
    return x.transpose(0, 2, 1, 3)


def tutorial_combine_heads(x):
    """The tutorial's combine: (batch, heads, seq, d_k) -> (batch, seq,
    d_model)."""
    batch_size, num_heads, seq_len, d_k = x.shape
    x = x.transpose(0, 2, 1, 3)
    return x.reshape(batch_size, seq_len, num_heads * d_k)


def tutorial_init_weights(d_model):
    """The tutorial's MultiHeadAttention.__init__ draws, from np.random's
    global state: W_q, W_k, W_v, W_o = randn(d, d) * sqrt(2 / d), in order."""
    return tuple(np.random.randn(d_model, d_model) * np.sqrt(2.0 / d_model)
                 for _ in range(4))


def tutorial_multi_head_attention(X, W_q, W_k, W_v, W_o, num_heads,
                                  mask=None):
    """The tutorial's MultiHeadAttention.forward: returns (output, weights)."""
    Q = tutorial_split_heads(np.matmul(X, W_q), num_heads)
    K = tutorial_split_heads(np.matmul(X, W_k), num_heads)
    V = tutorial_split_heads(np.matmul(X, W_v), num_heads)
    d_k = Q.shape[-1]
    scores = np.matmul(Q, K.transpose(0, 1, 3, 2)) / np.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask == 0, -1e9, scores)
    attention_weights = tutorial_softmax(scores, axis=-1)
    attention_output = np.matmul(attention_weights, V)
    combined = tutorial_combine_heads(attention_output)
    return np.matmul(combined, W_o), attention_weights


def tutorial_layer_norm(x, eps=1e-6):
    """The tutorial's layer normalisation (no gain/bias)."""
    mean = np.mean(x, axis=-1, keepdims=True)
    std = np.std(x, axis=-1, keepdims=True)
    return (x - mean) / (std + eps)


def tutorial_feed_forward(x, W1, b1, W2, b2):
    """The tutorial's position-wise feed-forward network (ReLU)."""
    hidden = np.maximum(0, np.matmul(x, W1) + b1)
    return np.matmul(hidden, W2) + b2


def tutorial_encoder_layer(x, mha, W1, b1, W2, b2, mask=None):
    """The tutorial's TransformerEncoderLayer.forward.

    `mha(x, mask)` is any function returning (attention output, weights),
    e.g. a MultiHeadAttention's forward.
    """
    attn_output, _ = mha(x, mask)
    x = tutorial_layer_norm(x + attn_output)
    ff_output = tutorial_feed_forward(x, W1, b1, W2, b2)
    return tutorial_layer_norm(x + ff_output)
