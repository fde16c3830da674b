"""PyTorch and resource accounting: the package students complete, one module per problem."""
