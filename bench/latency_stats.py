"""Latency figures shared by the benchmarks: p50, p99 and max of samples in seconds, as ms."""


def millis(samples, digits=2):
    s = sorted(samples)
    return {"p50_ms": round(1000 * s[len(s) // 2], digits),
            "p99_ms": round(1000 * s[max(0, int(len(s) * 0.99) - 1)], digits),
            "max_ms": round(1000 * s[-1], digits)}
