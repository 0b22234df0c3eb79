"""AccTFM (Zeng et al., IEEE TPDS 2022): fine-grained pipelining and hybrid compression for Megatron tensor parallelism."""
