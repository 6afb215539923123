"""Operations: metrics, tracing, log formats, the doctor."""
