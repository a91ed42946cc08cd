# Replica theory and Gaussian-model simulations (Fig. 3 left).


rule replica_theory:
    output:
        theory=f"{RESULTS}/theory/replica_theory.h5",
    params:
        job=job({"seed": CFG["seed"], "replica": CFG["replica"]}),
    threads: 1
    shell:
        stage("replica_theory")


rule replica_sims:
    output:
        simulations=f"{RESULTS}/theory/replica_simulations.h5",
    params:
        job=job({"seed": CFG["seed"], "replica": CFG["replica"]}),
    threads: 1
    shell:
        stage("replica_sims")
