"""
=================================================================
Hybrid model: learning parity XOR threshold with curator + agents
=================================================================

In the hybrid model of Beimel, Korolova, Nissim, Sheffet & Stemmer (*The power of
synergy in differential privacy*) a few people trust a curator with their data and many
more keep it, sending one locally private report each. The label
``y = ⟨k, x⟩ ⊕ 1[t ≥ θ]`` of §3 is hard for both sides alone: the curator's private
threshold learner needs many rows, and no local protocol with few rounds learns a
parity. Together they learn it:
:class:`~skhybrid.hybrid.ParityThresholdClassifier` sorts the curator's rows by ``t``,
learns one private parity per block of ``⌈1/α⌉`` blocks, and uses the agents' locally
private CDF of ``t`` to route a point to its block.

We plot the test error against the number ``m`` of curator rows (``c = 16`` parity bits,
``b = 10`` threshold bits, ``n = 10⁵`` agents, ε = 1) for

* the hybrid protocol (curator rows + agents),
* the curator alone (the same estimator with ``curator_mask=None`` on its ``m`` rows),
* the agents alone (:class:`~skhybrid.hybrid.LocalThresholdClassifier`).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from skhybrid.experiments.hybrid import separation_errors

c, b, alpha, n = 16, 10, 0.1, 100_000
ms = [2_000, 4_000, 7_000, 10_000, 20_000]
seeds = range(3)
results = {key: [] for key in ("hybrid", "curator", "local")}
for m in ms:
    errs = [separation_errors(c, b, alpha, m, n, seed=s) for s in seeds]
    for key in results:
        vals = [e[key] for e in errs]
        results[key].append((np.mean(vals), np.std(vals)))

# %%
# The hybrid protocol needs a few thousand curator rows per block before the private
# parity learners succeed; from there its error falls to about α. The curator alone
# spends half its budget on its own CDF and learns later; the agents alone stay at 1/2.
fig, ax = plt.subplots(figsize=(6, 4))
labels = {"hybrid": "hybrid (curator + agents)", "curator": "curator only",
          "local": "local agents only"}
for key, label in labels.items():
    mean, std = np.array(results[key]).T
    ax.errorbar(ms, mean, yerr=std, marker="o", capsize=3, label=label)
ax.axhline(0.5, color="grey", lw=0.8, ls=":")
ax.set_xscale("log")
ax.set_xlabel("curator rows m")
ax.set_ylabel("test error")
ax.set_title(f"Parity XOR threshold, c={c}, b={b}, n={n:.0e}, ε=1")
ax.legend()
fig.tight_layout()
plt.show()
