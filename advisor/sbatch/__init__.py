"""sbatch's language, as sbatch itself reads it: options, argv, ``#SBATCH``, ``#PBS``/``#BSUB``.

No advisor policy lives here: what a job asks for (its partitions, time, name), read with
sbatch's own rules, for the advice (advisor.advice) and everything else that reads jobs.  Every
module is on the submit path and imports only the standard library and light advisor modules.
"""
