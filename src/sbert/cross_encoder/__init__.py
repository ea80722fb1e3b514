"""CrossEncoder: both sentences through one BERT together, ``[CLS] A [SEP] B [SEP]`` → a score or a label.

The paper's BERT baseline: full attention across the two sentences makes it accurate, but every
pair needs its own forward pass, so comparing n sentences costs n·(n−1)/2 passes where a bi-encoder
(:class:`~sbert.SentenceEncoder`) needs n. Use it to rerank the few candidates that a bi-encoder
retrieved.

The model is a Hugging Face ``AutoModelForSequenceClassification``: the encoder, BERT's pooler on
``[CLS]`` and a linear head of ``num_labels`` outputs. Taking that class rather than an own head on
``AutoModel`` keeps the saved directory a plain Hugging Face checkpoint, which sentence-transformers'
``CrossEncoder`` and ``transformers`` load as they are.

sentence-transformers' ``CrossEncoder`` API runs as it is (``CrossEncoder(name_or_path, num_labels=,
max_length=, activation_fn=, device=)``, ``predict``, ``rank``, ``save``), with the same scores; on
the CPU a BERT classifier runs on the bi-encoder's engines (:mod:`sbert.cross_encoder.engine`). Its
loss and evaluator live where every kind's do: :mod:`sbert.losses.cross_encoder` (CrossEncoderLoss)
and :mod:`sbert.evaluation.cross_encoder` (CrossEncoderEvaluator).

Outputs:
- regression (``num_labels=1``): one logit per pair; :meth:`CrossEncoder.predict` applies a sigmoid,
  giving a score in [0, 1]. The paper's BERT-STSb baseline regresses the gold score scaled to 0-1, so
  a trainer fits ``sigmoid(logit)`` to ``score / 5`` (e.g. binary cross-entropy on the logit).
- classification (``num_labels=k``): k logits. ``predict`` gives them as they are for a model built as
  sentence-transformers builds it (``CrossEncoder(path)``), and probabilities (a softmax, in the order
  of ``label_names``) for one from :meth:`CrossEncoder.from_pretrained`, as sbert always has; a saved
  activation wins over both, and ``activation_fn=`` over all.
"""

from sbert.cross_encoder.engine import TokenizedPairs
from sbert.cross_encoder.loading import CONFIG_FILE
from sbert.cross_encoder.model import CrossEncoder
from sbert.cross_encoder.ranking import Ranked

__all__ = ["CONFIG_FILE", "CrossEncoder", "Ranked", "TokenizedPairs"]
