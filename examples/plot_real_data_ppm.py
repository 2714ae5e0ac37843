"""
==============================================================================
Privacy that follows the label on real data: breast cancer, benign rows public
==============================================================================

In the *label-determined* model (Bassily, Moran & Nandi 2020) only the rows of one class
need privacy: here, the malignant tumours of scikit-learn's breast cancer data, while the
benign ones are public (say, from consenting healthy participants).
:class:`~skhybrid.ppm.PPMHalfspaceClassifier` builds candidate polytopes around the
public rows and selects one with the exponential mechanism, ε-DP for the malignant rows.

PPM's candidate class grows quickly with the dimension, so we first project onto three
principal directions computed from the **public** rows only (free), after standardising
with the public rows' statistics (free too). We compare with non-private logistic
regression on the same three features, with :class:`~skhybrid.learners.DPLogisticRegression`
treating every row as private, and with predicting the majority class.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skhybrid.learners import DPLogisticRegression
from skhybrid.ppm import PPMHalfspaceClassifier

X_all, y_all = load_breast_cancer(return_X_y=True)
y_all = 1 - y_all  # 1 = malignant: the private class; 0 = benign: public


def split(seed, n_components=3):
    X, X_test, y, y_test = train_test_split(X_all, y_all, test_size=0.3, stratify=y_all,
                                            random_state=seed)
    public = y == 0
    mean, scale = X[public].mean(axis=0), X[public].std(axis=0)
    Z, Z_test = (X - mean) / scale, (X_test - mean) / scale
    _, _, Vt = np.linalg.svd(Z[public], full_matrices=False)  # public rows only
    P = Vt[:n_components].T
    return Z @ P, y, public, Z_test @ P, y_test


# %%
# Accuracy against the budget
# ---------------------------

epsilons = [0.1, 0.25, 0.5, 1.0, 2.0, 5.0]
n_splits = 5
acc = {"PPM (benign rows public)": np.zeros((n_splits, len(epsilons))),
       "DP logistic regression, every row private": np.zeros((n_splits, len(epsilons)))}
flat = {"non-private logistic regression": [], "majority class": []}
for s in range(n_splits):
    Z, y, public, Z_test, y_test = split(s)
    score = lambda model, Z_test=Z_test, y_test=y_test: float(  # noqa: E731
        np.mean(model.predict(Z_test) == y_test))
    flat["non-private logistic regression"].append(score(LogisticRegression().fit(Z, y)))
    flat["majority class"].append(float(np.mean(y_test == 0)))
    norm = float(np.quantile(np.linalg.norm(Z[public], axis=1), 0.95))  # public bound
    for j, eps in enumerate(epsilons):
        ppm = PPMHalfspaceClassifier(epsilon=eps, classes=[0, 1], random_state=100 * s + j)
        acc["PPM (benign rows public)"][s, j] = score(ppm.fit(Z, y, public_mask=public))
        lr = DPLogisticRegression(epsilon=eps, data_norm=norm, classes=[0, 1],
                                  random_state=100 * s + j)
        acc["DP logistic regression, every row private"][s, j] = score(lr.fit(Z, y))

for name, values in flat.items():
    print(f"{name:<44} accuracy {np.mean(values):.3f}")
for name, values in acc.items():
    print(f"{name:<44} " + "  ".join(f"eps={e:g}: {m:.3f}"
                                       for e, m in zip(epsilons, values.mean(axis=0))))

fig, ax = plt.subplots(figsize=(7, 4.3))
for name, values in acc.items():
    ax.errorbar(epsilons, values.mean(axis=0), yerr=values.std(axis=0), marker="o",
                capsize=3, label=name)
for (name, values), style in zip(flat.items(), ("--", ":")):
    ax.axhline(np.mean(values), color="gray", linestyle=style, label=name)
ax.set_xscale("log")
ax.set_xlabel("epsilon (malignant rows)")
ax.set_ylabel("test accuracy")
ax.set_title("Breast cancer, 3 public principal components")
ax.legend(fontsize="small", loc="lower right")
fig.tight_layout()
plt.show()

# %%
# Reading the figure
# ------------------
# Because the benign rows are public, PPM only has to *choose* among polytopes that the
# public rows already suggest, and the exponential mechanism's cost grows with the log of
# their number: it stays close to the non-private model down to small budgets. Logistic
# regression that treats every row as private pays for the whole model with noise.
