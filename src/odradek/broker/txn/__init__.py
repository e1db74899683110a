"""The transaction coordinator (KIP-98): transactional ids over ``__transaction_state``, the
markers that end transactions on partitions, and the requests that drive them."""
