# The GPU tests' two tiers (docs/development.md "GPU test tiers"). Every GPU test has one label of two (`ctest -L
# gpu`, a regular expression, runs both): `gpu-quick`, the tests named below (every module of the runtime and the NCCL
# API touched at small sizes; aimed at 6 minutes at most on one H200 with bench/device-run's step `tests`, not yet timed
# whole), or `gpu-long`, every other one (the sweeps over topologies, protocols, process counts and the MSCCL corpus;
# aimed under 10 minutes on one H200, step `tests-long`). A test that needs several GPUs skips with its reason on one.
#
# CANOPY_GPU_QUICK_TESTS: GoogleTest filter patterns of canopy_gpu_tests (joined with ':' for --gtest_filter; the
# long tier is its negation, so every test is in exactly one tier). CANOPY_GPU_QUICK_CHECKS: the other gpu ctests
# (tests/torch) of the quick tier.
set(CANOPY_GPU_QUICK_TESTS
    # runtime/comm: a communicator's checks, spec, one-rank and per-thread streams
    "CommunicatorErrorsOnGpu.*"
    "CommunicatorCreateOnGpu.*"
    "SpecOfOnGpu.NamesTheProtocolTheQueriesChooseAndPreparesWhatTheCallsRun"
    "OneRankOnGpu.PrepareNeedsNoPlanAndInfoSaysThereIsNoKernel"
    "PointToPointOnGpu.RefusesWhatItCannotMatchAndMovesARing"
    "AlltoallOnGpu.*"
    "GatherScatterOnGpu.*"
    "ExchangeBenchOnGpu.*"
    "DriverQueriesOnGpu.*"
    # bench/harness: the datacheck's GPU reference against the host's
    "ReferenceCheckOnGpu.*"
    # runtime/launch, codegen and the protocols: the planned trees, LL, LL128, direct two-shot on two ranks
    "Topologies/CollectivesOnGpu.MatchTheHostReference/h200x2_allreduce"
    "Topologies/CollectivesOnGpu.MatchTheHostReference/h200x2_broadcast"
    "Topologies/LL128OnGpu.MatchesTheHostReference/h200x2_allreduce"
    "Topologies/LLTwoShotOnGpu.MatchesTheHostReference/h200x2"
    "Topologies/DirectTwoShotOnGpu.MatchesTheHostReference/h200x2"
    "*TwoShotReach.*"
    "LL128Reach.*"
    "Plans/GeneratedKernelsOnGpu.DeliverTheCollective/h200x2_reducescatter"
    "Protocols/GraphCaptureOnGpu.ReplaysMatchEagerCalls/low_latency"
    "Protocols/GraphCaptureOnGpu.ReplaysMatchEagerCalls/trees"
    # dsl/ algorithms and the MSCCL-IR importer
    "Shipped/AlgorithmsOnGpu.MatchWhatTheProgramComputes/h200x2_ring_allreduce"
    "Corpus/MscclCorpusOnGpu.ComputesItsCollective/simple_allreduce_ring_4r_1i"
    # runtime/cuda, transport/ipc: shared memory and users' buffers across processes
    "ShareableMemoryOnGpu.*"
    "UserBuffersOnGpu.*"
    # runtime/detect, tune, watchdog, offload on one GPU
    "DetectOnGpu.OneGpuNodePerVisibleDeviceAndAValidTopology"
    "Protocols/WatchdogOnGpu.NamesWhatAStuckCollectiveWaitsFor/direct"
    "CopyEngineOnOneGpu.*"
    "HybridOnOneGpu.*"
    # several processes: the collectives, captured replays, a lost process, a mismatched call, send_recv
    "Protocols/MultiProcessOnGpu.TwoProcessesCheckEveryCollective/Default"
    "Protocols/MultiProcessOnGpu.TwoProcessesReplayPreparedCapturedCalls/Default"
    "MultiProcessFailureOnGpu.AKilledProcessIsReportedByTheOthersWithinTenSeconds"
    "MultiProcessFailureOnGpu.AMismatchedCount*"
    "PointToPointProcessesQuickOnGpu.*"
    # runtime/hosts: two "hosts" on one GPU through the real NCCL
    "HostsOnGpu.TwoHostsOfTwoCheckEveryCollective"
    # the NCCL API: init, PreMulSum, the borrowed calls, send/recv and the calls made of them served by Canopy, the
    # watchdog's abort, one rank's bad argument, teardown
    "Ranks/NcclApiOnGpu.NonBlockingInitAndPreMulSum/0"
    "Ranks/NcclApiOnGpu.Borrowed*/0"
    "NcclPointToPointOnOneGpu.TwoRanksServeEveryCallOnCanopy"
    "NcclApiWatchdogOnGpu.*"
    "Arguments/NcclBadArgumentOnGpu.TheOtherRanksFailWithinFiveSecondsInsteadOfHanging/null_1031"
    "Ways/NcclTeardownOnGpu.EveryProcessEndsPromptlyAndCleanly/destroy_IdFromRank0")
set(CANOPY_GPU_QUICK_CHECKS torch.borrowed_check torch.borrowed_check_real torch.ddp_check)
list(JOIN CANOPY_GPU_QUICK_TESTS ":" CANOPY_GPU_QUICK_FILTER)
