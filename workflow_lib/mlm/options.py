"""The hyperparameters of one masked-language-model training run (``train.train_many``): a
frozen dataclass that the caller builds (the train stage from its ``training`` config section:
``studies.potts_paper.stages_fits.training_options``). Every default is the config schema's
(``training.<field>``); ``a`` is the run's, from its name."""

from __future__ import annotations

from dataclasses import dataclass

from workflow_lib.core.config import schema_default
from workflow_lib.mlm.models import ArchSpec, arch_spec


@dataclass(frozen=True)
class TrainingOptions:
    """The options of one training run of one architecture (the schema's ``training`` keys of
    the same names say more):

    - optimiser (``train.make_optimizer``): ``optimizer`` (``"adam"`` or ``"sgd"``) at
      ``learning_rate`` with cosine decay to 0 over all steps (constant with a stop window);
      ``batch_size`` sequences per step (``(sequence, site)`` pairs with ``vanilla_sites:
      "all"``); ``epochs`` (with a stop window: the cap); ``restarts`` random initialisations
      trained side by side; ``l2``, the weight of ``sum ||theta||^2`` added to the loss;
    - models (``models.arch_spec``): ``init_scale``, the scale of the factored family's random
      initialisation; ``model_dim``, a transformer's width; ``vanilla_sites`` (``"one"`` or
      ``"all"``) and ``mask_token`` (``"channel"`` or ``"zero"``), transformers only; ``a``,
      the interpolated layer's mixing level in ``[0, 1]`` (``None`` for the other families);
    - evaluation and convergence: ``eval_every`` epochs between evaluations; the window
      criterion (``metrics.convergence``) over the last ``convergence_window`` (fraction of the
      epochs) at relative tolerance ``convergence_tol``; the factored family's float64 L-BFGS
      polish of ``polish_max_iter`` iterations (0: none) to ``polish_grad_tol``;
    - the stop criterion (``loop.Stop``; ``stop_window`` epochs, 0: off): ``stop_tol``, the
      smallest relative improvement of the held-out loss that keeps a run training, and
      ``stop_decays`` decays of the learning rate by ``stop_decay`` before a stop.
    """

    optimizer: str = schema_default("training.optimizer")
    learning_rate: float = schema_default("training.learning_rate")
    batch_size: int = schema_default("training.batch_size")
    epochs: int = schema_default("training.epochs")
    restarts: int = schema_default("training.restarts")
    l2: float = schema_default("training.l2")
    init_scale: float = schema_default("training.init_scale")
    model_dim: int = schema_default("training.model_dim")
    vanilla_sites: str = schema_default("training.vanilla_sites")
    mask_token: str = schema_default("training.mask_token")
    eval_every: int = schema_default("training.eval_every")
    convergence_window: float = schema_default("training.convergence_window")
    convergence_tol: float = schema_default("training.convergence_tol")
    polish_max_iter: int = schema_default("training.polish_max_iter")
    polish_grad_tol: float = schema_default("training.polish_grad_tol")
    stop_window: int = schema_default("training.stop_window")
    stop_tol: float = schema_default("training.stop_tol")
    stop_decays: int = schema_default("training.stop_decays")
    stop_decay: float = schema_default("training.stop_decay")
    a: float | None = None

    def arch_spec(self, arch: str, L: int, C: int) -> ArchSpec:
        """The ``ArchSpec`` of ``arch`` (one of ``models.ARCHS``) on sequences of length ``L``
        over ``C`` colours under these options (``models.arch_spec``)."""
        return arch_spec(arch, L, C, a=self.a, init_scale=self.init_scale,
                         model_dim=self.model_dim, mask_token=self.mask_token)
