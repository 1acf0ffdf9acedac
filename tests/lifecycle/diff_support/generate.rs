//! Random templates for the diff property test (`tests/lifecycle/diff.rs`): stacks of the types the
//! emulator serves (SQS, SNS, SSM, IAM) with random property values, intrinsics, conditions,
//! cross-stack imports and dynamic references, from a small seeded generator.

use serde_json::{json, Value};

/// A small seeded generator (xorshift64*): the property test's templates are reproducible from
/// the seed it prints (`CDKD_DIFF_SEED=N` replays one).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    pub fn word(&mut self) -> String {
        const SYLLABLES: &[&str] = &["ka", "lo", "mi", "ne", "ru", "so", "ta", "vi", "ze", "qu"];
        let n = 1 + self.below(3);
        (0..n)
            .map(|_| SYLLABLES[self.below(SYLLABLES.len())])
            .collect()
    }
}

/// What a generated stack may read besides its own resources.
pub struct World {
    /// A public SSM parameter with two versions, and the SSM-typed parameter's target.
    pub public: String,
    pub typed: String,
    pub secret: String,
    /// The export of the previous stack of the app, if any.
    pub import: Option<String>,
}

/// One generated string-valued expression: literals, intrinsics, public dynamic references
/// (whole, pinned to a version, inside text and inside a `Fn::Join`), the SSM-typed parameter,
/// a condition, another resource of the stack, another stack's export.
fn string(rng: &mut Rng, world: &World, earlier: &[(String, &str)]) -> Value {
    let public = &world.public;
    match rng.below(12) {
        0 | 1 => json!(rng.word()),
        2 => json!({"Fn::Join": ["-", [rng.word(), {"Ref": "Word"}]]}),
        3 => json!({"Fn::Sub": format!("${{AWS::Region}}-${{Word}}-{}", rng.word())}),
        4 => json!(format!("{{{{resolve:ssm:{public}}}}}")),
        5 => json!(format!("x-{{{{resolve:ssm:{public}:1}}}}-{}", rng.word())),
        6 => json!({"Fn::Join": ["", [rng.word(), format!("{{{{resolve:ssm:{public}}}}}"),
            {"Ref": "Typed"}]]}),
        7 => json!({"Ref": "Typed"}),
        8 => json!({"Fn::If": ["On", rng.word(), {"Ref": "Word"}]}),
        9 => json!({"Fn::Select": [rng.below(3), [rng.word(), rng.word(), rng.word()]]}),
        10 if !earlier.is_empty() => {
            let (id, ty) = &earlier[rng.below(earlier.len())];
            match *ty {
                "AWS::SQS::Queue" | "AWS::IAM::Role" => json!({"Fn::GetAtt": [id, "Arn"]}),
                _ => json!({"Ref": id}),
            }
        }
        11 if world.import.is_some() => json!({"Fn::ImportValue": world.import.clone()}),
        _ => json!(rng.word()),
    }
}

fn tags(rng: &mut Rng, world: &World, earlier: &[(String, &str)]) -> Value {
    let n = rng.below(3);
    Value::Array(
        (0..n)
            .map(|i| json!({"Key": format!("k{i}"), "Value": string(rng, world, earlier)}))
            .collect(),
    )
}

pub const TYPES: &[&str] = &[
    "AWS::SQS::Queue",
    "AWS::SNS::Topic",
    "AWS::SSM::Parameter",
    "AWS::IAM::Role",
];

/// Properties for one resource of `ty` (its stable parts, such as an SSM parameter's Name,
/// from `name`).
fn properties(
    rng: &mut Rng,
    world: &World,
    ty: &str,
    name: &str,
    earlier: &[(String, &str)],
) -> Value {
    let mut p = serde_json::Map::new();
    match ty {
        "AWS::SQS::Queue" => {
            let timeout = 10 * rng.below(60);
            p.insert(
                "VisibilityTimeout".into(),
                if rng.chance(50) {
                    json!(timeout)
                } else {
                    json!(timeout.to_string())
                },
            );
            if rng.chance(50) {
                p.insert(
                    "DelaySeconds".into(),
                    json!({"Fn::If": ["On", rng.below(10), {"Ref": "AWS::NoValue"}]}),
                );
            }
            p.insert("Tags".into(), tags(rng, world, earlier));
        }
        "AWS::SNS::Topic" => {
            p.insert("DisplayName".into(), string(rng, world, earlier));
            p.insert("Tags".into(), tags(rng, world, earlier));
        }
        "AWS::SSM::Parameter" => {
            p.insert("Name".into(), json!(name));
            p.insert("Type".into(), json!("String"));
            let value = if rng.chance(25) {
                // A secret reference: compared as its expression, never fetched by the diff.
                json!(format!("s-{{{{resolve:secretsmanager:{}}}}}", world.secret))
            } else {
                string(rng, world, earlier)
            };
            p.insert("Value".into(), value);
            if rng.chance(50) {
                p.insert("Description".into(), string(rng, world, earlier));
            }
        }
        _ => {
            p.insert(
                "AssumeRolePolicyDocument".into(),
                json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
                    "Principal": {"Service": "lambda.amazonaws.com"},
                    "Action": "sts:AssumeRole"}]}),
            );
            p.insert("Description".into(), string(rng, world, earlier));
            p.insert("Tags".into(), tags(rng, world, earlier));
        }
    }
    Value::Object(p)
}

/// A stack of `types` (logical ids `R0`, `R1`, ...) with random property values, outputs and
/// an export (`{stack}-Out0`).
pub fn stack(rng: &mut Rng, world: &World, stack: &str, types: &[&'static str]) -> Value {
    let mut resources = serde_json::Map::new();
    let mut earlier: Vec<(String, &str)> = Vec::new();
    for (i, ty) in types.iter().enumerate() {
        let id = format!("R{i}");
        let name = format!("{}/{stack}/{id}", world.typed.rsplit_once('/').unwrap().0);
        let props = properties(rng, world, ty, &name, &earlier);
        resources.insert(id.clone(), json!({"Type": ty, "Properties": props}));
        earlier.push((id, ty));
    }
    let mut outputs = serde_json::Map::new();
    for i in 0..1 + rng.below(3) {
        let mut o = json!({"Value": string(rng, world, &earlier)});
        if i == 0 {
            o["Export"] = json!({"Name": format!("{stack}-Out0")});
        }
        outputs.insert(format!("Out{i}"), o);
    }
    let word = rng.word();
    let on = if rng.chance(50) {
        word.clone()
    } else {
        rng.word()
    };
    json!({
        "Parameters": {
            "Word": {"Type": "String", "Default": word},
            "Typed": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": world.typed}
        },
        "Conditions": {"On": {"Fn::Equals": [{"Ref": "Word"}, on]}},
        "Resources": resources,
        "Outputs": outputs
    })
}
