-- Statements of store.go (see sql.go for the layout).

-- name: check_vector
SELECT $1::{ext}.vector