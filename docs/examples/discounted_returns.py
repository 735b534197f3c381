"""Library example: discounted returns of a reinforcement-learning trajectory split across ranks.

    mpiexec -n 4 python docs/examples/discounted_returns.py

A trajectory of steps t = 0 .. T-1 holds rewards r[t] and flags done[t], True where the episode
ends at step t (the step after it starts a new episode). The discounted return is

    G[t] = r[t] + gamma * (1 - done[t]) * G[t+1],    G[T] = V (the value of the state after the
                                                              last step: a bootstrap estimate)

so G is a linear recurrence run backwards, y[t] = a[t] * y[t+1] + b[t], with b = r and
a[t] = gamma * (1 - done[t]): the done flag of step t cuts the link from t to t+1, so a return
never sums rewards of the next episode. distscan.linear_recurrence(a, b, reverse=True,
initial=V) computes it with every rank holding a piece of the trajectory; the bootstrap V reaches
only the steps of the last, unfinished episode (past a done flag its factor is 0).

The tests run this file (tests/test_examples_operators.py) and check what it prints.
"""

import numpy as np
from mpi4py import MPI

import distscan

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

gamma = 0.99
bootstrap = 2.5      # V(s_T), e.g. from a critic; every rank passes the same value

# This rank's steps: uneven pieces on purpose, and rank 1 holds none when there are 3 ranks or
# more. Episodes end at random steps, and cross rank boundaries.
n_local = 0 if (rank == 1 and size >= 3) else 200 + 90 * rank
rng = np.random.default_rng(rank)
rewards = rng.uniform(-1.0, 1.0, n_local)
done = rng.random(n_local) < 0.03

returns = distscan.linear_recurrence(np.where(done, 0.0, gamma), rewards, initial=bootstrap, reverse=True,
                                     comm=comm)

# At the last step of an episode the return is that step's reward alone, exactly.
assert np.array_equal(returns[done], rewards[done])

# Check on rank 0 against the textbook loop over the gathered trajectory.
all_rewards, all_done, all_returns = (comm.gather(v, root=0) for v in (rewards, done, returns))
if rank == 0:
    all_rewards, all_done, all_returns = map(np.concatenate, (all_rewards, all_done, all_returns))
    reference, g = np.empty_like(all_rewards), bootstrap
    for t in reversed(range(len(all_rewards))):
        g = all_rewards[t] + gamma * (1 - all_done[t]) * g
        reference[t] = g
    # |a| <= gamma < 1: rounding errors decay backwards, a few ulp of the returns' scale.
    np.testing.assert_allclose(all_returns, reference, rtol=1e-12, atol=1e-12)

line = f"rank {rank}: no steps" if not n_local else \
    f"rank {rank}: {n_local} steps, {int(done.sum())} episode ends, G at its first step {returns[0]:.4f}"
lines = comm.gather(line, root=0)
if rank == 0:
    print("\n".join(lines))
    print(f"all {len(all_returns)} returns match the sequential loop ({int(all_done.sum())} episodes ended)")
