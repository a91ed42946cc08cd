"""Protein study: multiple sequence alignments of real protein families (read from FASTA or A3M,
filtered by gap fraction, split into training and held-out rows), their sequence weights and
effective number of sequences, the models fitted to them and the contact scores compared with the
families' structural distances."""
