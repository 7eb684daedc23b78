"""Memory-bound kernels of one transformer layer (simulator.workload.transformer)."""

from __future__ import annotations

from simulator.config.scenario import ModelConfig
from simulator.workload.layer_shape import LayerShape
from simulator.workload.transformer import layer_forward


def test_unfused_activation_moves_the_eager_ops_bytes_in_a_fused_layer():
    """``kernels.fused_activation: false`` (Megatron-Core's bias_activation_fusion false):
    the non-gated activation moves 4 ffn bytes (relu then pow, each a read and a write)
    instead of the fused kernel's 2, every other kernel unchanged."""
    model = ModelConfig(layers=32, hidden=4096, heads=32, ffn_hidden=16384, seq_len=4096)
    fused = layer_forward(LayerShape(model, 4, 2, sequence_parallel=True)).memory_bytes
    eager = layer_forward(LayerShape(model, 4, 2, sequence_parallel=True,
                                     fused_activation=False)).memory_bytes
    ffn = 4 * 4096 * 16384 / 2 * 2                      # tokens x ffn/tp x 2 B
    assert eager[4] - fused[4] == 2 * ffn
    assert list(eager[:4]) == list(fused[:4]) and len(eager) == len(fused)
