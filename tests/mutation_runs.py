"""Source mutations the suite must catch (issue 11), run in a scratch copy.

Each mutation is a one-line change to a model module; the script copies the
repository to a temporary directory, applies it there, runs the tests that
should catch it (in-memory tests only) and prints those that fail.  The
working tree is never modified.  Run from the repository root::

    python tests/mutation_runs.py            # every mutation
    python tests/mutation_runs.py ds_prior_left_out_of_objective

Not collected by pytest (the file name does not start with ``test_``); the
results are in doc/reliability.rst.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MUTATIONS = {
    "ds_prior_correct_ignored": (
        "skcrowd/_dawid_skene.py",
        "            rows = counts + self._pseudo_counts(K)\n",
        "            rows = counts + np.full((K, K), float(self.prior_wrong))\n",
        ["tests/test_dawid_skene.py"]),
    "ds_prior_left_out_of_objective": (
        "skcrowd/_dawid_skene.py",
        '        total = stats["loglik_total"] + self._log_prior(params, data.n_classes)\n',
        '        total = stats["loglik_total"]\n',
        ["tests/test_dawid_skene.py"]),
    "ds_one_coin_prior_correct_dropped": (
        "skcrowd/_dawid_skene.py",
        "            correct = np.trace(counts, axis1=1, axis2=2) + self.prior_correct\n",
        "            correct = np.trace(counts, axis1=1, axis2=2)\n",
        ["tests/test_dawid_skene.py"]),
    "glad_ability_prior_left_out": (
        "skcrowd/_glad.py",
        "        value += log_normal(b_log_kernel, n_items, self.b_prior_std)\n",
        "        value = log_normal(b_log_kernel, n_items, self.b_prior_std)\n",
        ["tests/test_glad.py::test_objective_is_the_marginal_log_posterior"]),
    "mace_parameter_term_left_out": (
        "skcrowd/_mace.py",
        '        return (stats["loglik_total"] + params["param_term"]) / data.n_items\n',
        '        return stats["loglik_total"] / data.n_items\n',
        ["tests/test_mace.py::test_objective_is_the_log_posterior_or_the_elbo"]),
    "irt_hyperprior_left_out": (
        "skcrowd/_irt.py",
        '            value += _hyper_log_prior(names, _hyper_vector(names, params["hyper"]))\n',
        "            pass\n",
        ["tests/test_irt.py::test_objective_is_the_quadrature_log_posterior"]),
    "ordinal_difficulty_kl_left_out": (
        "skcrowd/_ordinal.py",
        '            total -= float(np.sum(_gamma_kl(params["delta_shape"][g], '
        'params["delta_rate"][g],\n',
        '            total -= 0 * float(np.sum(_gamma_kl(params["delta_shape"][g], '
        'params["delta_rate"][g],\n',
        ["tests/test_ordinal.py::test_lower_bound_is_the_variational_bound"]),
}


def run(name, root, scratch):
    path, old, new, tests = MUTATIONS[name]
    target = scratch / path
    source = (root / path).read_text()
    if source.count(old) != 1:
        return f"## {name}: the line to mutate is not in {path} (exactly once); update the script"
    target.write_text(source.replace(old, new))
    try:
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                 "-rf", *tests], cwd=scratch, capture_output=True, text=True)
    finally:
        target.write_text(source)
    lines = [line for line in result.stdout.splitlines()
             if line.startswith("FAILED") or " passed" in line or " failed" in line]
    return "\n".join([f"## {name}", *lines])


def main(names):
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / "copy"
        shutil.copytree(root, scratch, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        for name in names or MUTATIONS:
            print(run(name, root, scratch), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
