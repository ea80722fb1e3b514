"""The paper's published figures (Reimers & Gurevych 2019), to print beside measured ones.

Tables 1 and 5 map a model row to its per-set figures; Table 2 lists (setting, model, Spearman).
"""

from __future__ import annotations

TABLE1_COLUMNS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R")
# Table 1: unsupervised STS, Spearman × 100 of the cosine similarity (no STS training data).
TABLE1: dict[str, tuple[float, ...]] = {
    "Avg. GloVe embeddings": (55.14, 70.66, 59.73, 68.25, 63.66, 58.02, 53.76),
    "Avg. BERT embeddings": (38.78, 57.98, 57.98, 63.15, 61.06, 46.35, 58.40),
    "BERT CLS-vector": (20.16, 30.01, 20.09, 36.88, 38.08, 16.50, 42.63),
    "InferSent - GloVe": (52.86, 66.75, 62.15, 72.77, 66.87, 68.03, 65.65),
    "Universal Sentence Encoder": (64.49, 67.80, 64.61, 76.83, 73.18, 74.92, 76.69),
    "SBERT-NLI-base": (70.97, 76.53, 73.19, 79.09, 74.30, 77.03, 72.91),
    "SBERT-NLI-large": (72.27, 78.46, 74.90, 80.99, 76.25, 79.23, 73.75),
    "SRoBERTa-NLI-base": (71.54, 72.49, 70.80, 78.74, 73.69, 77.77, 74.46),
    "SRoBERTa-NLI-large": (74.53, 77.00, 73.18, 81.85, 76.82, 79.10, 74.29),
}
# As printed. The paper's SBERT-NLI-base average (74.89) is not the mean of its row (74.86).
TABLE1_AVERAGES = {
    "Avg. GloVe embeddings": 61.32,
    "Avg. BERT embeddings": 54.81,
    "BERT CLS-vector": 29.19,
    "InferSent - GloVe": 65.01,
    "Universal Sentence Encoder": 71.22,
    "SBERT-NLI-base": 74.89,
    "SBERT-NLI-large": 76.55,
    "SRoBERTa-NLI-base": 74.21,
    "SRoBERTa-NLI-large": 76.68,
}

# Table 2: STS benchmark test, Spearman × 100 (mean ± std over 10 seeds where trained on STSb).
TABLE2: tuple[tuple[str, str, str], ...] = (
    ("not trained for STS", "Avg. GloVe embeddings", "58.02"),
    ("not trained for STS", "Avg. BERT embeddings", "46.35"),
    ("not trained for STS", "InferSent - GloVe", "68.03"),
    ("not trained for STS", "Universal Sentence Encoder", "74.92"),
    ("not trained for STS", "SBERT-NLI-base", "77.03"),
    ("not trained for STS", "SBERT-NLI-large", "79.23"),
    ("trained on STSb only", "BERT-STSb-base (cross-encoder)", "84.30 ± 0.76"),
    ("trained on STSb only", "SBERT-STSb-base", "84.67 ± 0.19"),
    ("trained on STSb only", "SRoBERTa-STSb-base", "84.92 ± 0.34"),
    ("trained on STSb only", "BERT-STSb-large (cross-encoder)", "85.64 ± 0.81"),
    ("trained on STSb only", "SBERT-STSb-large", "84.45 ± 0.43"),
    ("trained on STSb only", "SRoBERTa-STSb-large", "85.02 ± 0.76"),
    ("NLI, then STSb", "BERT-NLI-STSb-base (cross-encoder)", "88.33 ± 0.19"),
    ("NLI, then STSb", "SBERT-NLI-STSb-base", "85.35 ± 0.17"),
    ("NLI, then STSb", "SRoBERTa-NLI-STSb-base", "84.79 ± 0.38"),
    ("NLI, then STSb", "BERT-NLI-STSb-large (cross-encoder)", "88.77 ± 0.46"),
    ("NLI, then STSb", "SBERT-NLI-STSb-large", "86.10 ± 0.13"),
    ("NLI, then STSb", "SRoBERTa-NLI-STSb-large", "86.15 ± 0.35"),
)

TABLE5_COLUMNS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
# Table 5: SentEval transfer, accuracy × 100 of logistic regression on frozen embeddings.
TABLE5: dict[str, tuple[float, ...]] = {
    "Avg. GloVe embeddings": (77.25, 78.30, 91.17, 87.85, 80.18, 83.0, 72.87),
    "Avg. fast-text embeddings": (77.96, 79.23, 91.68, 87.81, 82.15, 83.6, 74.49),
    "Avg. BERT embeddings": (78.66, 86.25, 94.37, 88.66, 84.40, 92.8, 69.45),
    "BERT CLS-vector": (78.68, 84.85, 94.21, 88.23, 84.13, 91.4, 71.13),
    "InferSent - GloVe": (81.57, 86.54, 92.50, 90.38, 84.18, 88.2, 75.77),
    "Universal Sentence Encoder": (80.09, 85.19, 93.98, 86.70, 86.38, 93.2, 70.14),
    "SBERT-NLI-base": (83.64, 89.43, 94.39, 89.86, 88.96, 89.6, 76.00),
    "SBERT-NLI-large": (84.88, 90.07, 94.52, 90.33, 90.66, 87.4, 75.94),
}
TABLE5_AVERAGES = {
    "Avg. GloVe embeddings": 81.52,
    "Avg. fast-text embeddings": 82.42,
    "Avg. BERT embeddings": 84.94,
    "BERT CLS-vector": 84.66,
    "InferSent - GloVe": 85.59,
    "Universal Sentence Encoder": 85.10,
    "SBERT-NLI-base": 87.41,
    "SBERT-NLI-large": 87.69,
}


# Table 6: ablation of SBERT-base, Spearman × 100 on STSb dev.
TABLE6_POOLING: dict[str, dict[str, float]] = {
    "nli": {"mean": 80.78, "max": 79.07, "cls": 79.80},
    "stsb": {"mean": 87.44, "max": 69.92, "cls": 86.62},
}
TABLE6_CONCATENATION: dict[str, float] = {
    "u,v": 66.04,
    "|u-v|": 69.78,
    "u*v": 70.54,
    "|u-v|,u*v": 78.37,
    "u,v,u*v": 77.44,
    "u,v,|u-v|": 80.78,
    "u,v,|u-v|,u*v": 80.44,
}

# Table 7: sentences per second (CPU column; the paper's CPU is an i7-5820K, BERT-base).
TABLE7_CPU: dict[str, float] = {
    "Avg. GloVe embeddings": 6469,
    "InferSent": 137,
    "Universal Sentence Encoder": 67,
    "SBERT-base": 44,
    "SBERT-base, smart batching": 83,
}
# Section 1: the most similar pair among 10,000 sentences.
COST_CROSS_ENCODER_HOURS = 65.0
COST_SBERT_SECONDS = 5.0


def as_json() -> dict[str, object]:
    """All three tables as plain JSON-ready data, columns named."""
    return {
        "table1_sts_spearman": {
            row: {**dict(zip(TABLE1_COLUMNS, values)), "Avg.": TABLE1_AVERAGES[row]}
            for row, values in TABLE1.items()
        },
        "table2_stsb_test_spearman": [
            {"setting": setting, "model": model, "spearman": figure} for setting, model, figure in TABLE2
        ],
        "table5_senteval_accuracy": {
            row: {**dict(zip(TABLE5_COLUMNS, values)), "Avg.": TABLE5_AVERAGES[row]}
            for row, values in TABLE5.items()
        },
        "table6_stsb_dev_spearman": {"pooling": TABLE6_POOLING, "concatenation": TABLE6_CONCATENATION},
        "table7_cpu_sentences_per_second": TABLE7_CPU,
        "cost_most_similar_of_10000": {
            "cross_encoder_hours": COST_CROSS_ENCODER_HOURS,
            "sbert_seconds": COST_SBERT_SECONDS,
        },
    }
