//! The models a session offers ([`crate::Session::models`]): the `model` config option of ACP
//! v1, else the legacy `models` of older agents.

use serde_json::Value;

use super::SessionView;

/// One model the agent offers.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
}

/// How [`Session::set_model`] switches models for this agent.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "configId")]
pub enum ModelSwitch {
    /// `session/set_config_option` on this config option (category `model`; ACP v1).
    ConfigOption(String),
    /// The legacy `session/set_model`.
    Legacy,
}

/// The models of a session ([`Session::models`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Models {
    pub current: Option<String>,
    pub available: Vec<ModelInfo>,
    pub via: ModelSwitch,
}

impl Models {
    pub(crate) fn of(view: &SessionView) -> Option<Models> {
        let option = view.config_options.as_ref().and_then(|o| {
            o.as_array()?
                .iter()
                .find(|x| x.get("category").and_then(Value::as_str) == Some("model"))
        });
        if let Some(option) = option {
            // Flat options, or groups of options (`{group, name, options: [...]}`).
            let mut available = Vec::new();
            for o in option
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match o.get("options").and_then(Value::as_array) {
                    Some(group) => available.extend(group.iter().filter_map(model_of_option)),
                    None => available.extend(model_of_option(o)),
                }
            }
            return Some(Models {
                current: option
                    .get("currentValue")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                available,
                via: ModelSwitch::ConfigOption(
                    option.get("id").and_then(Value::as_str)?.to_owned(),
                ),
            });
        }
        let legacy = view.models.as_ref()?;
        Some(Models {
            current: legacy
                .get("currentModelId")
                .and_then(Value::as_str)
                .map(str::to_owned),
            available: legacy
                .get("availableModels")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|m| {
                    Some(ModelInfo {
                        id: m.get("modelId").and_then(Value::as_str)?.to_owned(),
                        name: m
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                        description: m
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    })
                })
                .collect(),
            via: ModelSwitch::Legacy,
        })
    }
}

fn model_of_option(o: &Value) -> Option<ModelInfo> {
    Some(ModelInfo {
        id: o.get("value").and_then(Value::as_str)?.to_owned(),
        name: o
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        description: o
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}
