import submitit


def submit(args, train):
    executor = submitit.AutoExecutor(folder=args.job_dir, slurm_max_num_timeout=30)
    executor.update_parameters(
        mem_gb=40 * args.ngpus,
        gpus_per_node=args.ngpus,  # expect: DT409
        tasks_per_node=args.ngpus,
        nodes=args.nodes,
    )
    executor.update_parameters(name="eval", timeout_min=60)
    return executor.submit(train, args)
