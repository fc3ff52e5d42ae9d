//! Interpreter-wide state that every subgraph shares (TFLite's `resources_`,
//! `resource_ids_` and `initialization_status_map_`): resource variables, named by
//! (container, shared_name) and held by id, and which CALL_ONCE init subgraphs have run.
//! Variables live here, not in any arena, so they keep their value across invokes and
//! subgraphs; `ResetVariableTensors` does not touch them (as in TFLite).

use crate::abi::types::TfLiteType;
use std::collections::{HashMap, HashSet};

/// The value of one resource variable.
#[derive(Clone, Debug)]
pub struct ResourceVariable {
    pub dtype: TfLiteType,
    pub dims: Vec<i32>,
    pub data: Vec<u8>,
}

/// A static hash table (HASHTABLE): its key and value types, and its entries once
/// HASHTABLE_IMPORT filled it (`None` before). Keys and values are kept as bytes: int64s
/// little-endian, strings as they are.
#[derive(Clone, Debug)]
pub struct Hashtable {
    pub key: TfLiteType,
    pub value: TfLiteType,
    pub entries: Option<HashMap<Vec<u8>, Vec<u8>>>,
}

/// State shared by the subgraphs of one interpreter.
#[derive(Default, Debug)]
pub struct SharedState {
    resource_ids: HashMap<(String, String), i32>,
    variables: HashMap<i32, ResourceVariable>,
    initialized: HashSet<usize>,
    /// Hash tables by table id (they persist across invokes, as variables do).
    pub hashtables: HashMap<i32, Hashtable>,
}

impl SharedState {
    /// The id of the resource (container, shared_name), assigned on first use.
    pub fn resource_id(&mut self, container: &str, shared_name: &str) -> i32 {
        let next = self.resource_ids.len() as i32;
        *self.resource_ids.entry((container.to_string(), shared_name.to_string())).or_insert(next)
    }

    /// The variable with id `id`, if it was ever assigned.
    pub fn variable(&self, id: i32) -> Option<&ResourceVariable> {
        self.variables.get(&id)
    }

    /// Sets variable `id` (creating it).
    pub fn assign(&mut self, id: i32, value: ResourceVariable) {
        self.variables.insert(id, value);
    }

    /// True once CALL_ONCE ran init subgraph `index`.
    pub fn is_initialized(&self, index: usize) -> bool {
        self.initialized.contains(&index)
    }

    /// Records that init subgraph `index` ran.
    pub fn mark_initialized(&mut self, index: usize) {
        self.initialized.insert(index);
    }
}
