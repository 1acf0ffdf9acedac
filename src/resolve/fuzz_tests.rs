//! No-panic tests: random and garbage values through every entry point.

use serde_json::{json, Map, Value};

use super::test_support::*;
use super::*;

/// xorshift64*: small, deterministic, good enough to shake the resolver.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const FUNCTIONS: &[&str] = &[
    "Ref",
    "Fn::GetAtt",
    "Fn::Join",
    "Fn::Sub",
    "Fn::Select",
    "Fn::Split",
    "Fn::If",
    "Fn::Equals",
    "Fn::And",
    "Fn::Or",
    "Fn::Not",
    "Fn::FindInMap",
    "Fn::Base64",
    "Fn::Cidr",
    "Fn::GetAZs",
    "Fn::Length",
    "Fn::ToJsonString",
    "Fn::ImportValue",
    "Fn::GetStackOutput",
    "Fn::Bogus",
    "Condition",
];

const WORDS: &[&str] = &[
    "",
    "Env",
    "Count",
    "Names",
    "Secret",
    "Bucket",
    "Db",
    "PendingQueue",
    "IsProd",
    "IsDev",
    "NotProd",
    "Nope",
    "RegionMap",
    "us-east-1",
    "Prefix",
    "AWS::Region",
    "AWS::NoValue",
    "AWS::AccountId",
    "AWS::StackId",
    "AWS::Bogus",
    "Bucket.Arn",
    "Db.Endpoint.Address",
    "${Env}",
    "${!x}",
    "${",
    "}",
    "${Bucket.Arn}-${AWS::Region}",
    "${Nope}",
    ",",
    "10.0.0.0/16",
    "2001:db8::/48",
    "-1",
    "0",
    "1",
    "256",
    "DefaultValue",
    "StackName",
    "OutputName",
    "é✓",
];

fn scalar(rng: &mut Rng) -> Value {
    match rng.below(6) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 0),
        2 => json!(rng.below(300) as i64 - 20),
        3 => json!(f64::from(rng.below(1000) as u32) / 7.0),
        4 => json!(i64::MIN + rng.below(3) as i64),
        _ => Value::String(rng.pick(WORDS).to_string()),
    }
}

fn value(rng: &mut Rng, depth: usize) -> Value {
    if depth == 0 {
        return scalar(rng);
    }
    match rng.below(8) {
        0 | 1 => scalar(rng),
        2 => Value::Array((0..rng.below(5)).map(|_| value(rng, depth - 1)).collect()),
        3 => {
            let mut m = Map::new();
            for _ in 0..rng.below(4) {
                m.insert(rng.pick(WORDS).to_string(), value(rng, depth - 1));
            }
            Value::Object(m)
        }
        _ => {
            let mut m = Map::new();
            m.insert(rng.pick(FUNCTIONS).to_string(), value(rng, depth - 1));
            Value::Object(m)
        }
    }
}

#[test]
fn random_values_never_panic() {
    let t = template();
    let c = ctx();
    let p = bind(&t);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut outcomes = [0usize; 2];
    for i in 0..20_000 {
        let v = value(&mut rng, 1 + i % 6);
        let mut r = Resolver::new(&t, &c, &p, &Synthetic, &SyntheticExternal);
        let out = r.resolve_value(&v, "Resources.R.Properties");
        outcomes[usize::from(out.is_ok())] += 1;
        if let Err(e) = out {
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }
    // Both outcomes are exercised.
    assert!(outcomes[0] > 100 && outcomes[1] > 100, "{outcomes:?}");
}

#[test]
fn random_templates_never_panic() {
    let mut rng = Rng(42);
    let c = ctx();
    for _ in 0..2_000 {
        let mut conditions = Map::new();
        for name in ["IsProd", "IsDev", "NotProd", "X"] {
            conditions.insert(name.into(), value(&mut rng, 4));
        }
        let mut parameters = Map::new();
        for name in ["Env", "Count", "Names"] {
            let types = [
                "String",
                "Number",
                "List<Number>",
                "CommaDelimitedList",
                "AWS::SSM::Parameter::Value<String>",
                "Bogus",
            ];
            let mut p = json!({"Type": rng.pick(&types)});
            if rng.below(4) > 0 {
                p["Default"] = scalar(&mut rng);
            }
            if rng.below(3) == 0 {
                p["AllowedPattern"] = json!(rng.pick(&["[a-z]*", "(", ".*", "\\d+"]));
            }
            if rng.below(3) == 0 {
                p["MinValue"] = json!(rng.below(10));
                p["MaxLength"] = json!(rng.below(10));
            }
            parameters.insert(name.into(), p);
        }
        let doc = json!({
            "Parameters": parameters,
            "Mappings": {"RegionMap": {"us-east-1": {"Prefix": value(&mut rng, 2)}}},
            "Conditions": conditions,
            "Resources": {
                "Bucket": {"Type": "AWS::S3::Bucket", "Properties": {"P": value(&mut rng, 5)}},
                "Db": {"Type": "AWS::RDS::DBInstance", "Condition": "IsProd"}
            },
            "Outputs": {"O": {"Value": value(&mut rng, 4), "Condition": "X", "Export": {"Name": value(&mut rng, 2)}}}
        });
        let Ok(mut t) = crate::template::Template::from_value(doc, std::path::Path::new("f.json"))
        else {
            continue;
        };
        let Ok(p) = bind_parameters(&t, &[], "S", &NoExternalLookup) else {
            continue;
        };
        let verdicts =
            Resolver::new(&t, &c, &p, &Synthetic, &SyntheticExternal).evaluate_conditions();
        if let Ok(v) = &verdicts {
            prune(&mut t, v, "S");
        }
        let mut r = Resolver::new(&t, &c, &p, &Synthetic, &SyntheticExternal);
        let _ = r.resolve_properties("Bucket");
        let _ = r.resolve_properties("Db");
        let _ = r.resolve_output("O");
    }
}

#[test]
fn random_cidr_arguments_never_panic() {
    let mut rng = Rng(7);
    let blocks = [
        "10.0.0.0/8",
        "0.0.0.0/0",
        "255.255.255.255/32",
        "::/0",
        "ffff::/16",
        "::1/128",
        "1.2.3.4/",
        "/",
        "",
    ];
    for _ in 0..20_000 {
        let block = rng.pick(&blocks);
        let count = rng.below(300) as i64 - 10;
        let bits = rng.below(140) as i64 - 5;
        if let Ok(list) = cidr(block, count, bits) {
            assert_eq!(list.len() as i64, count);
        }
    }
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let mut v = json!("leaf");
    for i in 0..600 {
        v = match i % 4 {
            0 => json!([v]),
            1 => json!({"Fn::If": ["IsDev", v, "x"]}),
            2 => json!({"Fn::Select": [0, [v]]}),
            _ => json!({"k": v}),
        };
    }
    let e = eval(v).unwrap_err();
    assert!(matches!(e.kind, ResolveErrorKind::TooDeep(_)), "{e}");
    let mut c = json!({"Fn::Equals": ["a", "a"]});
    for _ in 0..600 {
        c = json!({"Fn::Not": [c]});
    }
    let e = verdicts_of(c).unwrap_err();
    assert!(matches!(e.kind, ResolveErrorKind::TooDeep(_)), "{e}");
    // A long chain of condition references.
    let mut t = template();
    for i in 0..1_000 {
        t.conditions
            .insert(format!("C{i}"), json!({"Condition": format!("C{}", i + 1)}));
    }
    t.conditions.insert("C1000".into(), json!(true));
    let c = ctx();
    let p = bind(&t);
    let e = Resolver::new(&t, &c, &p, &Synthetic, &NoExternalLookup)
        .evaluate_conditions()
        .unwrap_err();
    assert!(matches!(e.kind, ResolveErrorKind::TooDeep(_)), "{e}");
    // Just under the limit is fine.
    let mut v = json!("leaf");
    for _ in 0..(MAX_DEPTH - 1) / 2 {
        v = json!({"Fn::If": ["IsDev", v, "x"]});
    }
    assert_eq!(eval(v).unwrap(), Some(json!("leaf")));
}

fn verdicts_of(condition: Value) -> Result<ConditionVerdicts, ResolveError> {
    let mut t = template();
    t.conditions.insert("Deep".into(), condition);
    let c = ctx();
    let p = bind(&t);
    let mut r = Resolver::new(&t, &c, &p, &Synthetic, &NoExternalLookup);
    r.evaluate_conditions()
}
